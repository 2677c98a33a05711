"""reschedule package."""
