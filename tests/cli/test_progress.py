"""Progress output: one line per finished phase in a log, nothing redrawn."""

import io

from tensoropt.cli.progress import progress_bar


def test_a_log_gets_one_line_per_finished_phase():
    log = io.StringIO()          # not a tty
    with progress_bar("mlp on 4 devices", stream=log) as update:
        for done in range(4):
            update("pricing edges", done, 3)
        for done in range(11):
            update("tracking ops", done, 10)
    assert log.getvalue().splitlines() == ["mlp on 4 devices: pricing edges 3/3",
                                           "mlp on 4 devices: tracking ops 10/10"]
