"""Console helpers of the CLI: delayed progress on a terminal, tables that degrade to lists.

* :class:`DelayedProgress` shows a transient ``rich`` progress bar on stderr, but only when
  stderr is a terminal and only once the work has taken longer than ``delay_s`` (2 s): short
  commands print no bar, pipes and CI logs never get one.
* :func:`print_table` prints a ``rich`` table when it fits the console's width and otherwise
  the same cells as a list (one block per row, ``column: value`` per line), so no column is
  cut to "protoc…" on a narrow terminal or in an 80-column pipe.
* :func:`terminal_progress` is a plain ``rich`` progress display that draws on a terminal only.

No torch here; ``rich`` only.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from types import TracebackType

from rich.console import Console
from rich.measure import Measurement
from rich.progress import BarColumn, Progress, ProgressColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

PROGRESS_DELAY_S = 2.0
"""Work shorter than this shows no progress bar."""


class DelayedProgress:
    """A transient progress bar on stderr that appears only for work longer than *delay_s*.

    Use as a context manager; call :meth:`update` as stages start. Off a terminal (pipe, make,
    CI) nothing is ever drawn, so the command's own output stays clean.

    Args:
        description: the first stage's text.
        total: number of stages (``None``: a bar without an end, only the elapsed time).
        delay_s: seconds before the bar appears (s).
        console: where to draw (default: a stderr console).
    """

    def __init__(self, description: str, total: int | None = None, *, delay_s: float = PROGRESS_DELAY_S,
                 console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.enabled = self.console.is_terminal
        self.delay_s = delay_s
        self._progress = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                                  console=self.console, transient=True)
        self._task: TaskID = self._progress.add_task(description, total=total)
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._started = False
        self._closed = False

    def _start(self) -> None:
        with self._lock:
            if not self._closed:
                self._progress.start()
                self._started = True

    def __enter__(self) -> DelayedProgress:
        if self.enabled:
            self._timer = threading.Timer(self.delay_s, self._start)
            self._timer.daemon = True
            self._timer.start()
        return self

    def update(self, description: str, *, advance: float = 0.0) -> None:
        """Show *description* as the current stage and advance the bar by *advance* stages."""
        self._progress.update(self._task, description=description, advance=advance)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            self._closed = True
            if self._started:
                self._progress.stop()


def terminal_progress(console: Console, *columns: ProgressColumn, transient: bool = False) -> Progress:
    """A ``rich`` progress display on *console* that draws only when *console* is a terminal.

    Off a terminal (stdout redirected to a file, a pipe, make, CI) the display is disabled, so not
    even its final line is printed and the command's own output stays clean.

    Args:
        console: where to draw.
        columns: the progress columns.
        transient: remove the bar from the terminal when the work ends.
    """
    return Progress(*columns, console=console, transient=transient, disable=not console.is_terminal)


def table_fits(console: Console, table: Table) -> bool:
    """Whether *table* fits *console*'s width without shrinking any column."""
    unbounded = console.options.update_width(1 << 20)  # measure the natural width, not the clamped one
    return Measurement.get(console, unbounded, table).maximum <= console.width


def print_table(console: Console, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], *,
                right_align_from: int = 1) -> None:
    """Print *rows* as a table when it fits *console*, else as a readable list.

    Args:
        console: the output console (its width decides the layout).
        title: the table's title (also the list's heading).
        columns: column headings.
        rows: cell texts, one sequence per row (as many cells as columns).
        right_align_from: index of the first right-aligned (numeric) column.
    """
    table = Table()  # the title is a line of its own: a title as wide as a path would wrap over a narrow table
    for i, column in enumerate(columns):
        table.add_column(column, justify="right" if i >= right_align_from else "left", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    console.print(title, markup=False, highlight=False, soft_wrap=True)
    if table_fits(console, table):
        console.print(table)
        return
    for row in rows:
        console.print(f"- {row[0]}", markup=False, highlight=False)
        for column, cell in zip(columns[1:], row[1:], strict=True):
            console.print(f"    {column}: {cell}", markup=False, highlight=False)
