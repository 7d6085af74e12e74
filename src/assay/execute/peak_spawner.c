/*
 * assay's peak spawner: starts one command for Assay so that the command's peak
 * resident memory is its own, as /usr/bin/time reports it.
 *
 * A command that Python starts (vfork or fork, then exec) inherits Python's
 * high-water mark: at the exec the kernel keeps the old address space's peak
 * (exec_mmap), so 'sleep 0.01' read 55 MB, Assay's size.  This program is small and
 * static: the process it clones starts with its few pages, so the exec'd command's
 * peak is the command's.  The clone is made with CLONE_PARENT: the command is Assay's
 * child, as a direct launch's (Assay reaps it, its parent is Assay), and leads a
 * process group of its own; this program exits at once.
 *
 * Usage: assay-peak FD PATH ARGV0 [ARG...]
 *   Starts PATH with ARGV0 ARG... in this environment and reports on descriptor FD
 *   (closed to the command at its exec): "P pid t0_s t0_ns" (t0 on CLOCK_MONOTONIC,
 *   Python's perf_counter clock, just before the clone), and "E errno" when the exec
 *   failed (the command then exits 127).  Exit status 0 once reported, 127 otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 4)
        return 127;
    int fd = atoi(argv[1]);
    if (fd < 3 || fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
        return 127;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* fork's semantics (a copy of this small process), Assay as the parent */
    long pid = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
    if (pid == 0) {
        setpgid(0, 0);
        execv(argv[2], argv + 3);
        dprintf(fd, "E %d\n", errno);
        _exit(127);
    }
    if (pid < 0) {
        dprintf(fd, "E %d\n", errno);
        return 127;
    }
    dprintf(fd, "P %ld %lld %ld\n", pid, (long long)t0.tv_sec, t0.tv_nsec);
    return 0;
}
