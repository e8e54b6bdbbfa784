"""Views of schedules: text Gantt charts for terminals (plots come with the report issue)."""

from opsched.viz.text import gantt_text

__all__ = ["gantt_text"]
