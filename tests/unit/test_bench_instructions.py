"""quicklaunch.bench.instructions: the plumbing around callgrind (its child
loops, the main thread's total, the table, the missing-valgrind message).
The counting itself needs valgrind and minutes: benchmarks/README.md has its
figures; here nothing runs under it."""
import shutil

import pytest

from quicklaunch.bench import instructions


@pytest.mark.parametrize("row", list(instructions.ROWS))
@pytest.mark.parametrize("nparams", [4, 16])
def test_every_row_loops_its_launch(row, nparams):
    instructions.child(row, nparams, 50, "cpu")   # raises if a statement is wrong


def test_children_run_the_module_by_its_name():
    assert instructions.MODULE == instructions.__name__   # never "-m __main__"


def test_the_main_threads_total_is_read(tmp_path):
    (tmp_path / "cg.123-01").write_text("# callgrind format\nevents: Ir\nsummary: 98765\n")
    (tmp_path / "cg.123-02").write_text("events: Ir\nsummary: 5\n")
    assert instructions.main_thread_total(tmp_path) == 98765
    (tmp_path / "cg.124-01").write_text("totals: 1\n")
    with pytest.raises(RuntimeError, match="one main-thread callgrind file"):
        instructions.main_thread_total(tmp_path)


def test_table_gives_ratios_to_the_floor():
    result = {"device": "cpu", "low": 10, "high": 30,
              "rows": {"C-ext floor": {4: 400.0, 16: 800.0},
                       "configured": {4: 560.0, 16: 1000.0}}}
    text = instructions.table(result)
    assert "1.40x" in text and "1.25x" in text and "30 - 10 steps" in text


def test_without_valgrind_it_says_so(monkeypatch, capsys):
    real_which = shutil.which
    monkeypatch.setattr(instructions.shutil, "which",
                        lambda name: None if name == "valgrind" else real_which(name))
    assert instructions.main(["--quick"]) == 2
    assert "valgrind is not installed" in capsys.readouterr().err
