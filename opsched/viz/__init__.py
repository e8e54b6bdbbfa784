"""Views of schedules: text Gantt charts for terminals, matplotlib figures for notebooks."""

from opsched.viz.plots import plot_gantt, plot_memory
from opsched.viz.text import gantt_text

__all__ = ["gantt_text", "plot_gantt", "plot_memory"]
