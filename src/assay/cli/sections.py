"""``--help`` with the options grouped by what they are for, as long option lists read
better in sections (measurement, budget, output, store, cluster)."""

from __future__ import annotations

import click

from assay.cli.option_values import AssayCommand

SECTIONS = (
    "Measurement",
    "Parameter scans (hyperfine's -P, -L)",
    "Stopping rule and budget",
    "Output",
    "Store",
    "Where trials run",
)
SECTION_OF = {
    **dict.fromkeys(
        (
            "shell",
            "timeout",
            "prepare",
            "ignore_failure",
            "show_output",
            "warmup",
            "under_test",
            "no_overhead",
            "no_monitor",
            "pi",
            "seed",
            "fixed_order",
            "repetitions",
            "sampler",
            "model",
            "log",
            "samples",
            "trees",
            "top",
            "objective",
            "rank_by",
            "metrics",
            "knob_columns",
            "unsafe",
            "tune",
            "allow_unsafe",
            "jobs",
            "from_file",
            "from_files",
            "from_csv",
            "params",
            "metric",
            "unit",
            "lower_is_better",
            "against",
            "median",
            "setup_cmd",
            "cleanup_cmd",
            "conclude_cmd",
            "no_shell",
        ),
        "Measurement",
    ),
    **dict.fromkeys(("scan", "scan_step", "scan_lists"), "Parameter scans (hyperfine's -P, -L)"),
    **dict.fromkeys(
        (
            "ci_width",
            "confidence",
            "max_rounds",
            "max_time",
            "min_samples",
            "min_rounds",
            "alpha",
            "runs",
            "interference",
            "require_ci_width",
            "start",
            "step",
            "r2",
            "max_settings",
            "busy",
        ),
        "Stopping rule and budget",
    ),
    **dict.fromkeys(
        (
            "json_out",
            "csv_out",
            "trials_out",
            "markdown_out",
            "plot",
            "quiet",
            "summary",
            "report_out",
            "hyperfine_json",
            "hyperfine_csv",
            "time_unit",
        ),
        "Output",
    ),
    **dict.fromkeys(("html_out", "plots_dir"), "Output"),  # assay report
    **dict.fromkeys(("store", "fresh", "resume", "name", "study"), "Store"),
    **dict.fromkeys(("workers", "cluster", "insecure"), "Where trials run"),
}


class SectionedCommand(AssayCommand):
    """A command whose ``--help`` lists its options under :data:`SECTIONS`."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        groups: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                section = SECTION_OF.get(param.name or "", "Other options")
                groups.setdefault(section, []).append(record)
        for title in (*SECTIONS, "Other options"):
            if title in groups:
                with formatter.section(title):
                    formatter.write_dl(groups[title])
