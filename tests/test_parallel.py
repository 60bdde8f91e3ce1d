"""--jobs N: same bytes as one process, order kept, models loaded once per worker, errors with file:line."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from nlpipe.io.conllu import parse_string
from nlpipe.errors import InputError, ModelError, NlpipeError
from nlpipe.runtime.pipeline import run_annotate
from test_annotate_standins import install, make_model

TEXT = "".join(f"Paragraph {p} starts here. It has a Second sentence.\n\n" for p in range(30))


def conllu(n: int, bad_at: int = 0) -> str:
    out = []
    for k in range(1, n + 1):
        rows = [f"# sent_id = s{k}"] + [f"{i}\tWord{i}\t_\t_\t_\t_\t_\t_\t_\t_" for i in range(1, k % 5 + 2)]
        if k == bad_at:
            rows.append("9\tbroken")
        out.append("\n".join(rows) + "\n\n")
    return "".join(out)


def run(tmp_path: Path, inputs, name: str, **kw) -> str:
    out = tmp_path / name
    run_annotate([str(p) for p in inputs], str(out), **kw)
    return out.read_text(encoding="utf-8")


@pytest.fixture
def files(tmp_path):
    raw = tmp_path / "a.txt"
    raw.write_text(TEXT, encoding="utf-8")
    conl = tmp_path / "b.conllu"
    conl.write_text(conllu(50), encoding="utf-8")
    return raw, conl


def test_jobs_give_the_same_bytes_in_the_same_order(tmp_path, monkeypatch, files):
    install(tmp_path / "models", monkeypatch)
    for jobs, batch in ((2, 3), (3, 1), (2, 256)):
        # (the document-level stand-in sees documents cut after 16 batches, so compare equal batches)
        one = run(tmp_path, files, f"one-{batch}.conllu", batch=batch)
        assert len(parse_string(one)) == 110
        assert run(tmp_path, files, f"j{jobs}-{batch}.conllu", jobs=jobs, batch=batch) == one


def test_each_worker_loads_the_models_once(tmp_path, monkeypatch, files):
    log = tmp_path / "loads.log"
    install(tmp_path / "models", monkeypatch, stages=("pos",), load_log=str(log))
    run(tmp_path, files, "out.conllu", stages=["tokenize", "pos"], jobs=2, batch=2)  # 55 chunks
    pids = log.read_text().split()
    assert len(pids) == 2 and len(set(pids)) == 2 and str(os.getpid()) not in pids


def test_input_error_in_a_worker_names_file_and_line(tmp_path, monkeypatch):
    install(tmp_path / "models", monkeypatch, stages=("pos",))
    src = tmp_path / "bad.conllu"
    text = conllu(40, bad_at=33)
    src.write_text(text, encoding="utf-8")
    line = text.splitlines().index("9\tbroken") + 1
    with pytest.raises(InputError) as e:
        run(tmp_path, [src], "out.conllu", stages=["pos"], jobs=2, batch=4)
    assert (e.value.path, e.value.line) == (str(src), line)
    assert not (tmp_path / "out.conllu").exists()


def test_skip_bad_in_workers(tmp_path, monkeypatch):
    install(tmp_path / "models", monkeypatch, stages=("pos",))
    src = tmp_path / "bad.conllu"
    text = conllu(40, bad_at=33)
    src.write_text(text, encoding="utf-8")
    warnings = []
    monkeypatch.setattr("nlpipe.runtime.pipeline.print_warning", warnings.append)
    one = run(tmp_path, [src], "one.conllu", stages=["pos"], skip_bad=True, batch=4)
    two = run(tmp_path, [src], "two.conllu", stages=["pos"], skip_bad=True, jobs=2, batch=4)
    assert one == two
    bad = text.split("\n\n")[32] + "\n\n"
    assert bad in two and "9\tbroken" in bad
    assert len(warnings) == 2 and warnings[0] == warnings[1]


def test_model_error_in_workers_is_reported_not_hung(tmp_path, monkeypatch):
    dirs = install(tmp_path / "models", monkeypatch, stages=("pos",))
    (dirs["pos"] / "config.json").write_text('{"stage": "pos", "arch": "standin-pos.v1", "format": 1')
    with pytest.raises(ModelError, match="corrupt model configuration"):
        run_annotate([str(tmp_path)], str(tmp_path / "o.conllu"), ["pos"], jobs=2)


def test_one_model_per_stage_option_reaches_the_workers(tmp_path, monkeypatch, files):
    install(tmp_path / "models", monkeypatch)
    other = make_model(tmp_path / "other", "parse", max_len=2)
    out = run(tmp_path, files[1:], "o.conllu", stages=["pos", "parse"], models={"parse": str(other)}, jobs=2)
    long = [s for s in parse_string(out) if len(s.words) > 2]
    assert long and all(w[6] == "_" for s in long for w in s.words)


def test_per_file_output_with_jobs(tmp_path, monkeypatch, files):
    install(tmp_path / "models", monkeypatch)
    run_annotate([str(p) for p in files], str(tmp_path / "one") + "/", batch=4)
    run_annotate([str(p) for p in files], str(tmp_path / "two") + "/", batch=4, jobs=2)
    for name in ("a.conllu", "b.conllu"):
        assert (tmp_path / "two" / name).read_bytes() == (tmp_path / "one" / name).read_bytes()


def test_a_dying_worker_ends_the_run_with_an_error_not_a_hang(tmp_path, monkeypatch, files):
    install(tmp_path / "models", monkeypatch, stages=("pos",), die_unless_pid=os.getpid())
    out = tmp_path / "out.conllu"
    with pytest.raises(NlpipeError, match="a worker process died"):
        run_annotate([str(files[1])], str(out), ["pos"], jobs=2, batch=4)
    assert not out.exists()


def test_workers_and_the_main_process_split_the_cores_between_their_math_threads(tmp_path, monkeypatch):
    from nlpipe.runtime import parallel
    from nlpipe.runtime.chain import PipelineSpec

    install(tmp_path / "models", monkeypatch, stages=("pos",))
    for var in parallel.THREAD_VARS:  # set, then deleted: monkeypatch restores whatever ChunkPool sets
        monkeypatch.setenv(var, "unset")
        monkeypatch.delenv(var)
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 6)
    pool = parallel.ChunkPool(PipelineSpec(["pos"]), jobs=2)
    try:
        seen = pool.executor.submit(os.getenv, "OMP_NUM_THREADS").result(timeout=60)
    finally:
        pool.terminate()
    assert seen == "3" and all(os.environ[v] == "3" for v in parallel.THREAD_VARS)


# ---------------------------------------------------------------------------------------------
# A stage command's default --jobs (run_stage with jobs=None)

def test_auto_jobs_one_per_core_up_to_the_chunks_of_a_file(tmp_path, monkeypatch):
    from nlpipe.runtime import pipeline

    monkeypatch.setattr(pipeline, "usable_cpus", lambda: 4)
    monkeypatch.setattr(pipeline, "SENTENCE_BYTES", 100)
    path = tmp_path / "in.conllu"
    path.write_bytes(b"x" * 2500)                       # 25 sentences' worth: 2.5 chunks of 10
    assert pipeline.auto_jobs(str(path), 10, "cpu") == 2
    assert pipeline.auto_jobs(str(path), 1, "cpu") == 4  # 25 chunks, 4 cores
    assert pipeline.auto_jobs(str(path), 20, "cpu") == 1  # one chunk is never split
    assert pipeline.auto_jobs(str(path), 1, "cuda") == 1
    assert pipeline.auto_jobs(str(path), 1, "auto") == 1
    assert pipeline.auto_jobs("-", 1, "cpu") == 1         # a stream: its size is unknown


def test_a_stage_command_on_a_large_file_runs_workers_with_the_same_bytes(tmp_path, monkeypatch):
    from nlpipe.runtime import pipeline
    from nlpipe.runtime.pipeline import run_stage

    install(tmp_path / "models", monkeypatch, stages=("pos",))
    monkeypatch.setattr(pipeline, "usable_cpus", lambda: 2)
    monkeypatch.setattr(pipeline, "SENTENCE_BYTES", 10)
    src = tmp_path / "in.conllu"
    src.write_text(conllu(60), encoding="utf-8")
    runners = []
    make = pipeline.make_runner
    monkeypatch.setattr(pipeline, "make_runner", lambda spec, jobs: runners.append(jobs) or make(spec, jobs))
    run_stage("pos", str(src), str(tmp_path / "one.conllu"), jobs=1, batch=4)
    run_stage("pos", str(src), str(tmp_path / "auto.conllu"), batch=4)
    assert runners == [1, 2]
    one = (tmp_path / "one.conllu").read_text(encoding="utf-8")
    assert len(parse_string(one)) == 60
    assert (tmp_path / "auto.conllu").read_text(encoding="utf-8") == one
