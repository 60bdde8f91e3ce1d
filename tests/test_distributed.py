"""nlpipe annotate --cluster: a 2-worker Dask LocalCluster on 127.0.0.1 gives the same files as a
local run, retries a failed task, does not redo finished files and survives a killed worker.
Skipped (with the reason) when Dask is not installed: it is the optional extra nlpipe[dask]."""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Dict

import pytest

from nlpipe.io.conllu import parse_string
from nlpipe.errors import NlpipeError
from nlpipe.runtime.chain import PipelineSpec
from nlpipe.runtime.pipeline import Annotator
from conftest import require_module
from test_annotate_standins import install, register

TESTS = str(Path(__file__).resolve().parent)
N_FILES = 20


def file_text(k: int) -> str:
    return "".join(f"File {k} paragraph {p}. It has Two sentences here.\n\n" for p in range(1 + k % 4))


@pytest.fixture(scope="module")
def cluster():
    require_module("distributed", "Dask is an optional extra: pip install 'nlpipe[dask]'")
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None, silence_logs=40) as c:
        yield c


class Standins:
    """Worker plugin: registers the stand-in stages in every worker, including restarted ones."""

    name = "nlpipe-standins"

    def __init__(self, dirs: Dict[str, str]):
        self.dirs = dirs

    def setup(self, worker) -> None:
        if TESTS not in sys.path:
            sys.path.insert(0, TESTS)
        register({s: Path(d) for s, d in self.dirs.items()})


@pytest.fixture
def setup(tmp_path, monkeypatch, cluster, request):
    """Stand-in models (parametrized indirectly with a delay per sentence: slow enough to kill a
    worker mid-run), registered here and on the workers, 20 input files, and the expected outputs
    from a local run."""
    from distributed import Client, WorkerPlugin

    delay = getattr(request, "param", 0)
    dirs = install(tmp_path / "models", monkeypatch, **({"delay": delay} if delay else {}))
    plugin = type("StandinsPlugin", (Standins, WorkerPlugin), {})({s: str(d) for s, d in dirs.items()})
    with Client(cluster.scheduler_address) as client:
        client.register_plugin(plugin)
    src = tmp_path / "in"
    src.mkdir()
    inputs = []
    for k in range(N_FILES):
        p = src / f"doc{k:02d}.txt"
        p.write_text(file_text(k), encoding="utf-8")
        inputs.append(str(p))
    expected = {}
    fast = install(tmp_path / "fast", monkeypatch)  # same output, no delay
    ann = Annotator(PipelineSpec(["tokenize", "pos", "parse", "ner"], models={s: str(d) for s, d in fast.items()}))
    for p in inputs:
        out = tmp_path / "local.conllu"
        ann.run_file(p, str(out))
        expected[Path(p).stem + ".conllu"] = out.read_text(encoding="utf-8")
    return inputs, expected


def outputs(d: Path) -> Dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in d.glob("*.conllu")}


def test_cluster_output_equals_the_local_run(tmp_path, cluster, setup):
    from nlpipe.runtime.distributed import run_cluster

    inputs, expected = setup
    warnings = []
    result = run_cluster(cluster.scheduler_address, inputs, str(tmp_path / "out") + "/", warn=warnings.append)
    assert outputs(tmp_path / "out") == expected
    assert result["files"] == N_FILES and result["retried"] == 0 and warnings == []
    assert result["sentences"] == sum(len(parse_string(t)) for t in expected.values())
    assert not [p for p in (tmp_path / "out").iterdir() if not p.name.endswith(".conllu")]


def test_finished_files_are_not_redone(tmp_path, cluster, setup):
    from nlpipe.runtime.distributed import run_cluster

    inputs, expected = setup
    out = tmp_path / "out"
    out.mkdir()
    (out / "doc03.conllu").write_text("done before\n", encoding="utf-8")
    warnings = []
    result = run_cluster(cluster.scheduler_address, inputs, str(out), warn=warnings.append)
    assert result["skipped"] == 1 and result["files"] == N_FILES - 1
    assert (out / "doc03.conllu").read_text(encoding="utf-8") == "done before\n"
    assert warnings == [f"1 of {N_FILES} output files exist in {out}; not redone"]
    again = run_cluster(cluster.scheduler_address, inputs, str(out), warn=warnings.append)
    assert again["files"] == 0 and again["skipped"] == N_FILES


def test_a_failed_task_is_retried_and_reported(tmp_path, cluster, setup, monkeypatch):
    from distributed import Client

    from nlpipe.runtime.distributed import run_cluster

    inputs, expected = setup
    marker = tmp_path / "failed-once"
    flaky = install(tmp_path / "flaky", monkeypatch, stages=("pos",), fail_marker=str(marker))
    with Client(cluster.scheduler_address) as client:
        client.register_plugin(type("FlakyPlugin", (Standins, __import__("distributed").WorkerPlugin),
                                    {"name": "nlpipe-flaky"})({"pos": str(flaky["pos"])}))
    try:
        warnings = []
        result = run_cluster(cluster.scheduler_address, inputs[:3], str(tmp_path / "out") + "/", ["tokenize", "pos"],
                             warn=warnings.append)
    finally:
        with Client(cluster.scheduler_address) as client:
            client.unregister_worker_plugin("nlpipe-flaky")
    assert marker.exists() and result["retried"] == 1 and result["files"] == 3
    assert len(warnings) == 1 and "task failed on try 1 of 3 (RuntimeError: stand-in failure" in warnings[0]
    assert warnings[0].endswith("; trying again")


def test_input_errors_are_reported_not_retried(tmp_path, cluster, setup):
    from nlpipe.runtime.distributed import run_cluster

    inputs, expected = setup
    bad = tmp_path / "in" / "bad.conllu"
    bad.write_text("1\ta" + "\t_" * 8 + "\n\n1\tx\n", encoding="utf-8")
    with pytest.raises(NlpipeError, match=f"1 of 3 files failed \\({bad}: {bad}:3: expected 10"):
        run_cluster(cluster.scheduler_address, inputs[:2] + [str(bad)], str(tmp_path / "out") + "/", ["tokenize", "pos"])
    assert sorted(outputs(tmp_path / "out")) == ["doc00.conllu", "doc01.conllu"]


@pytest.mark.parametrize("setup", [0.02], indirect=True)
def test_survives_a_killed_worker(tmp_path, cluster, setup):
    from distributed import Client

    from nlpipe.runtime.distributed import run_cluster

    inputs, expected = setup
    out = tmp_path / "out"
    result: Dict = {}

    def go() -> None:
        try:
            result.update(run_cluster(cluster.scheduler_address, inputs, str(out) + "/", warn=lambda m: None))
        except BaseException as e:  # reported by the assertions below
            result["error"] = e

    with Client(cluster.scheduler_address) as client:
        pids = client.run(os.getpid)
        runner = threading.Thread(target=go)
        runner.start()
        deadline = time.monotonic() + 120
        while len(list(out.glob("*.conllu"))) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(list(out.glob("*.conllu"))) < N_FILES, "the run ended before a worker could be killed"
        os.kill(next(iter(pids.values())), signal.SIGKILL)
        runner.join(300)
        client.wait_for_workers(2, timeout=60)
    assert "error" not in result, result.get("error")
    assert result["files"] == N_FILES
    assert outputs(out) == expected
    assert sorted(p.name for p in out.iterdir()) == sorted(expected)  # no temporary file of the killed worker


def test_missing_dask_is_a_clear_error(tmp_path, monkeypatch):
    from nlpipe.runtime.distributed import run_cluster

    (tmp_path / "a.txt").write_text("Text.\n")
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(NlpipeError, match=r"--cluster needs Dask: pip install 'nlpipe\[dask\]'"):
        run_cluster("tcp://127.0.0.1:1", [str(tmp_path / "a.txt")], str(tmp_path / "out") + "/", ["tokenize"])


def test_cluster_needs_an_output_directory(tmp_path):
    from nlpipe.runtime.distributed import run_cluster

    with pytest.raises(NlpipeError, match="-o must be a directory"):
        run_cluster("tcp://127.0.0.1:1", ["a.txt"], "-")
    # as in a local run, `-o x.conllu` names a file: no folder of that name is made
    with pytest.raises(NlpipeError, match="-o must be a directory .an existing one, or a name ending in /."):
        run_cluster("tcp://127.0.0.1:1", ["a.txt"], str(tmp_path / "x.conllu"))
    assert list(tmp_path.iterdir()) == []


def test_a_scheduler_without_workers_is_a_clear_error(tmp_path):
    pytest.importorskip("distributed", reason="Dask is an optional extra: pip install 'nlpipe[dask]'")
    from distributed import LocalCluster

    from nlpipe.runtime.distributed import run_cluster

    (tmp_path / "a.txt").write_text("Text.\n")
    with LocalCluster(n_workers=0, host="127.0.0.1", dashboard_address=None, silence_logs=40) as empty:
        start = time.monotonic()
        with pytest.raises(NlpipeError, match=f"the Dask scheduler at {empty.scheduler_address} has had no "
                                              "worker for 1 s"):
            run_cluster(empty.scheduler_address, [str(tmp_path / "a.txt")], str(tmp_path / "out") + "/",
                        ["tokenize"], no_worker_timeout=1)
        assert time.monotonic() - start < 30
    assert list((tmp_path / "out").iterdir()) == []


def test_the_command_line_on_a_cluster(tmp_path, cluster):
    """`nlpipe annotate --cluster ADDR FILES -o DIR/` as a user runs it (tokenize only: no stand-ins)."""
    from conftest import run_cli

    src = []
    for k in range(3):
        p = tmp_path / f"t{k}.txt"
        p.write_text(file_text(k), encoding="utf-8")
        src.append(str(p))
    r = run_cli("annotate", "--stages", "tokenize", "--cluster", cluster.scheduler_address, *src,
                "-o", str(tmp_path / "out") + "/")
    assert r.returncode == 0, r.stderr
    for p in src:
        local = run_cli("annotate", "--stages", "tokenize", p)
        assert (tmp_path / "out" / (Path(p).stem + ".conllu")).read_bytes() == local.stdout


def test_an_unreachable_scheduler_is_a_clear_error(tmp_path, cluster):
    from nlpipe.runtime.distributed import run_cluster

    (tmp_path / "a.txt").write_text("Text.\n")
    with pytest.raises(NlpipeError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:1 "):
        run_cluster("tcp://127.0.0.1:1", [str(tmp_path / "a.txt")], str(tmp_path / "out") + "/", ["tokenize"],
                    connect_timeout="1s")
