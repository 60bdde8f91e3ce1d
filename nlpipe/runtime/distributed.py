"""``nlpipe annotate --cluster tcp://HOST:PORT FILES -o DIR/``: one Dask task per input file.

Each task annotates one file into ``DIR/<name>.conllu`` on a worker, which loads the pipeline once
and keeps it for later tasks; the file is written to a temporary name and renamed, so ``DIR`` never
holds a partial output, and outputs already in ``DIR`` are finished work that is not redone. Inputs
and ``DIR`` must be reachable under the same paths from every worker (a shared file system).

A task on a worker that dies is rescheduled by Dask itself; a task that fails is tried again here up
to ``retries`` times, each failure reported on stderr. Input errors are not retried: they would fail
again. Dask is an optional dependency (``pip install 'nlpipe[dask]'``) imported only here.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from nlpipe.errors import InputError, NlpipeError
from nlpipe.io.outputs import is_output_dir, plan_outputs, stale_temporaries
from nlpipe.registry import resolve_model
from nlpipe.runtime.chain import PipelineSpec, resolve_stages
from nlpipe.runtime.chunks import CHUNK_SENTENCES
from nlpipe.runtime.pipeline import Annotator, print_warning
from nlpipe.runtime.progress import Progress

_annotators: Dict[str, Annotator] = {}  # per worker process: spec key -> loaded pipeline
# Stage objects are not meant to be shared between threads: a worker with several threads runs its
# files one at a time (start workers with --nthreads 1 and more processes to use more cores).
_lock = threading.Lock()


def annotate_file_task(spec: PipelineSpec, batch: int, src: str, dst: str) -> Dict[str, Any]:
    """Runs on a worker: annotate ``src`` into ``dst``. Errors of the user's input come back as
    values (``{"error": ...}``), since they are final; anything else raises and may be retried."""
    warnings: List[str] = []
    try:
        with _lock:
            key = spec.key()
            ann = _annotators.get(key)
            if ann is None:
                ann = _annotators[key] = Annotator(spec, 1, batch)
            ann.warn = warnings.append
            stats = ann.run_file(src, dst)
    except InputError as e:
        return {"error": str(e), "kind": "input", "warnings": warnings}
    except NlpipeError as e:
        return {"error": str(e), "kind": "other", "warnings": warnings}
    return dict(stats, warnings=warnings)


def _client(address: str, timeout: str) -> Any:
    try:
        from distributed import Client
    except ImportError:
        raise NlpipeError("--cluster needs Dask: pip install 'nlpipe[dask]' (dask[distributed])") from None
    try:
        return Client(address, timeout=timeout)
    except (OSError, TimeoutError) as e:
        raise NlpipeError(f"cannot reach the Dask scheduler at {address} ({e})") from None


def _completed(client: Any, running: Any, address: str, timeout: float) -> Iterator[Any]:
    """The futures of ``running`` (a Dask ``as_completed``) as they finish; an error when the
    scheduler has had no worker for ``timeout`` seconds (its tasks would wait forever)."""
    alone_since: Optional[float] = None
    while not running.is_empty():
        if running.has_ready():
            alone_since = None
            yield next(running)
            continue
        if client.nthreads():
            alone_since = None
        elif alone_since is None:
            alone_since = time.monotonic()
        elif time.monotonic() - alone_since > timeout:
            raise NlpipeError(f"the Dask scheduler at {address} has had no worker for {timeout:.0f} s; "
                              "start workers and run again (finished files are not redone)")
        time.sleep(0.2)


def run_cluster(address: str, inputs: List[str], out_dir: str, stages: Optional[List[str]] = None, *,
                models: Optional[Dict[str, str]] = None, keep_existing: bool = False, skip_bad: bool = False,
                batch: int = CHUNK_SENTENCES, retries: int = 2, progress: Optional[bool] = None,
                warn: Callable[[str], None] = print_warning, connect_timeout: str = "10s",
                no_worker_timeout: float = 60.0, **options: Any) -> Dict[str, Any]:
    """Annotate each input file into ``out_dir`` on the Dask cluster at ``address``.

    Returns counts (files done, skipped, retried; sentences, tokens). Raises :class:`NlpipeError`
    listing the files that failed after all tries (the other files are done), or when the
    scheduler has had no worker for ``no_worker_timeout`` seconds. Temporary files that a dead
    worker left are removed at the end.
    """
    if not inputs:
        raise NlpipeError("--cluster needs input files")
    if not is_output_dir(out_dir):  # as in a local run, where `-o x.conllu` is one file
        raise NlpipeError(f"--cluster writes one file per input: -o must be a directory (an existing one, "
                          f"or a name ending in /), not '{out_dir}'")
    spec = PipelineSpec(resolve_stages(stages), dict(models or {}), dict(options), keep_existing, skip_bad)
    for s in spec.stages:
        resolve_model(s, spec.models.get(s))
    pairs = plan_outputs([os.path.abspath(p) for p in inputs], os.path.abspath(out_dir))
    todo = [(s, d) for s, d in pairs if not os.path.exists(d)]
    result: Dict[str, Any] = {"files": 0, "skipped": len(pairs) - len(todo), "retried": 0,
                              "sentences": 0, "tokens": 0}
    if result["skipped"]:
        warn(f"{result['skipped']} of {len(pairs)} output files exist in {out_dir}; not redone")
    if not todo:
        return result
    client = _client(address, connect_timeout)
    from distributed import as_completed

    failed: List[Tuple[str, str]] = []
    try:
        with Progress("annotate", len(todo), "files", "tokens", progress) as prog:
            tries: Dict[Any, Tuple[str, str, int]] = {}
            for src, dst in todo:
                tries[client.submit(annotate_file_task, spec, batch, src, dst, pure=False)] = (src, dst, 1)
            running = as_completed(list(tries))
            for fut in _completed(client, running, address, no_worker_timeout):
                src, dst, attempt = tries.pop(fut)
                if fut.status != "finished":
                    err = fut.exception()
                    if attempt <= retries:
                        result["retried"] += 1
                        warn(f"{src}: task failed on try {attempt} of {retries + 1} "
                             f"({type(err).__name__}: {err}); trying again")
                        again = client.submit(annotate_file_task, spec, batch, src, dst, pure=False)
                        tries[again] = (src, dst, attempt + 1)
                        running.add(again)
                    else:
                        failed.append((src, f"{type(err).__name__}: {err}"))
                    continue
                out = fut.result()
                for w in out.get("warnings", []):
                    warn(w)
                if "error" in out:
                    failed.append((src, out["error"]))
                    continue
                result["files"] += 1
                result["sentences"] += out["sentences"]
                result["tokens"] += out["tokens"]
                prog.update(1, out["tokens"])
    finally:
        client.close()
        for _, dst in todo:  # what a killed worker left (the tasks are over, or abandoned)
            for tmp in stale_temporaries(dst):
                try:
                    os.remove(tmp)
                except OSError:
                    pass
    if failed:
        lines = "; ".join(f"{src}: {msg}" for src, msg in failed)
        raise NlpipeError(f"{len(failed)} of {len(todo)} files failed ({lines}); the others are in {out_dir}")
    return result
