"""The results as one markdown table and one PNG chart."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    """A pass/fail check: `value` must be >= `threshold` (or <= when `at_most`)."""

    name: str
    value: float
    threshold: float
    at_most: bool = False

    @property
    def passed(self) -> bool:
        """Whether the value meets the threshold."""
        return self.value <= self.threshold if self.at_most else self.value >= self.threshold

    @property
    def margin(self) -> float:
        """value / threshold, inverted for at-most targets: >= 1 passes."""
        return self.threshold / self.value if self.at_most else self.value / self.threshold

    @property
    def text(self) -> str:
        """The target as written in the table, e.g. ">= 0.9"."""
        return f"{'<=' if self.at_most else '>='} {self.threshold:g}"

    @property
    def status(self) -> str:
        """PASS or FAIL."""
        return "PASS" if self.passed else "FAIL"


@dataclass(frozen=True)
class Row:
    """One line of the table."""

    benchmark: str
    variant: str
    result: str
    ratio: str = ""
    target: Target | None = None


def markdown(rows: list[Row]) -> str:
    """The table in GitHub markdown."""
    lines = [
        "| Benchmark | Variant | Result | Ratio (median, min-max over reps) | Target | Status |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        target, status = ("", "") if row.target is None else (row.target.text, row.target.status)
        cells = [row.benchmark, row.variant, row.result, row.ratio, target, status]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def chart(path: str, load: dict[str, float], build: dict[str, float], storage, targets, title):
    """Four panels: load clips/s, build videos/s, storage MB/video, targets as value/threshold."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(15, 10))
    barh(axes[0, 0], load, "clips/s (median)", "Loading 64-frame clips")
    barh(axes[0, 1], build, "videos/s (median)", "Building")
    storage_panel(axes[1, 0], storage)
    targets_panel(axes[1, 1], targets)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def barh(ax, values: dict[str, float], xlabel: str, title: str) -> None:
    """Horizontal bars labelled with their values."""
    names = list(values)[::-1]
    ax.barh(names, [values[n] for n in names], color="tab:blue")
    for i, name in enumerate(names):
        ax.text(values[name], i, f" {values[name]:.3g}", va="center")
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.margins(x=0.2)


def storage_panel(ax, footprints) -> None:
    """MB per video of each format, plain and gzipped, on a log scale."""
    names = [f.name for f in footprints]
    y = range(len(names))
    plain = [f.bytes_per_video / 1e6 for f in footprints]
    packed = [f.gzip_bytes_per_video / 1e6 for f in footprints]
    ax.barh([i + 0.2 for i in y], plain, height=0.4, label="plain", color="tab:blue")
    ax.barh([i - 0.2 for i in y], packed, height=0.4, label="gzip", color="tab:orange")
    ax.set_yticks(list(y), names)
    ax.set_xscale("log")
    ax.set_xlabel("MB per video (log)")
    ax.set_title("Storage")
    ax.legend()


def targets_panel(ax, targets: list[Target]) -> None:
    """Each target's measured value over its threshold: right of the line passes."""
    names = [t.name for t in targets][::-1]
    margins = [t.margin for t in targets][::-1]
    colors = ["tab:green" if m >= 1 else "tab:red" for m in margins]
    ax.barh(names, margins, color=colors)
    ax.axvline(1.0, color="black", linestyle="--")
    for i, margin in enumerate(margins):
        ax.text(margin, i, f" {margin:.2f}", va="center")
    ax.set_xlabel("measured / target (>= 1 passes)")
    ax.set_title("Targets")
    ax.margins(x=0.2)
