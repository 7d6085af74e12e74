# Sourced by Assay's shell recipes: the one way they make a folder (bash).
#   . scripts/private-dir.sh; private_dir DIR || exit 1
# private_dir DIR makes DIR mode 700 (its missing parents 700 too), or accepts an
# existing DIR only when it is a folder of the caller's own, not a symbolic link, that
# nobody else may enter, in a folder no other user can rename entries in (root's or
# the caller's, not writable by others unless sticky like /tmp). Anything else is
# refused with the reason: a folder at a predictable path in a shared place may have
# been made, or filled with links and keys, by another user.
private_dir() {
    local dir=$1 parent mode owner
    parent=$(dirname -- "$dir")
    (umask 077 && mkdir -p -- "$parent") || return 1
    read -r owner mode < <(stat -L -c '%u %a' -- "$parent")
    if [ "$owner" != 0 ] && [ "$owner" != "$(id -u)" ] ||
        { (( 8#$mode & 8#022 )) && ! (( 8#$mode & 8#1000 )); }; then
        echo "private_dir: $parent (owner uid $owner, mode $mode) can be changed by other users;" \
            "name a folder of your own" >&2
        return 1
    fi
    if mkdir -m 700 -- "$dir" 2> /dev/null; then return 0; fi
    if [ -L "$dir" ] || [ ! -d "$dir" ] || [ ! -O "$dir" ] || [ "$(stat -c %a -- "$dir")" != 700 ]; then
        echo "private_dir: $dir exists and is not a folder of uid $(id -u) with mode 700" \
            "(a link, another user's, or open to others); remove it or name another folder" >&2
        return 1
    fi
}
