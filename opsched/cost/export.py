"""Write a fitted model as the shipped profiles: one ``opsched-cost-profile/1`` document per GPU.

:func:`profile_docs` turns a :class:`~opsched.cost.fit.Model` into the documents (each GPU's
own curves, else the pooled ones with same-chip siblings, and its floors);
:func:`fit_profiles` fits on the timing tables and writes them with the spec table and the
residual trees (``opsched cost fit``). :class:`opsched.cost.profile.Profile` reads them back.

Examples
--------
>>> from opsched.cost.fit import fit_model, load_fit_data
>>> docs = profile_docs(fit_model(load_fit_data(files=["deepbench_gemm.csv"]), trees=False))
>>> docs["T4"]["curves"]["matmul"]["half"]["source"], docs["L4"]["kernel_floor"]["source"]
('fitted', 'pooled')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from opsched.cost.fit import FIT_FILES, Model, fit_model, fitted_on_traces, load_fit_data
from opsched.cost.floor import floor_of
from opsched.cost.sibling import pick_sibling
from opsched.cost.specs import GpuSpec, load_specs
from opsched.errors import InputError

__all__ = ["fit_profiles", "profile_docs"]


def _curve_doc(c: Mapping[str, Any]) -> dict[str, Any]:
    """A curve as a profile stores it; ``profiler: true`` where it was fitted on profiler
    rows (:func:`opsched.cost.boost.tree_method` reads it)."""
    doc = {"rows": c["rows"], "beta": [round(float(b), 6) for b in c["beta"]],
           "overheads": {m: round(o, 3) for m, o in sorted(c["overheads"].items())}}  # fmt: skip
    return doc | ({"profiler": True} if fitted_on_traces(c) else {})


def profile_docs(model: Model, specs: Mapping[str, GpuSpec] | None = None) -> dict[str, Any]:
    """One ``opsched-cost-profile/1`` document per known GPU.

    A curve the GPU transfers (``source: pooled``) also lists, under ``siblings``, the curve
    of a same-chip GPU per kind of timing (``call``, ``kernel``, ``profiler``) where one qualifies
    (:mod:`opsched.cost.sibling`); :meth:`opsched.cost.profile.Profile.curve` prefers it for
    that kind.
    """
    specs = load_specs() if specs is None else specs
    fams = sorted({f for f, _ in model.pooled})
    docs = {}
    for key, spec in specs.items():
        curves: dict[str, dict[str, Any]] = {}
        for fam in fams:
            for cls in ("fp32", "half", "int8"):
                own = model.groups.get((key, fam, cls))
                c = own or model.pooled.get((fam, cls))
                if c is None:
                    continue
                entry = _curve_doc(c) | {"source": c["source"]}
                borrowed = {} if own is not None else {
                    kind: found for kind in ("call", "kernel", "profiler")
                    if (found := pick_sibling(key, fam, cls, kind, model.groups, specs))
                }  # fmt: skip
                if borrowed:
                    entry["siblings"] = {kind: _curve_doc(sc) | {"gpu": sib}
                                         for kind, (sib, sc) in borrowed.items()}  # fmt: skip
                curves.setdefault(fam, {})[cls] = entry
        arch = {k: s.arch for k, s in specs.items()}
        us, how = floor_of(model.floors, key, arch)
        floor = {"us": us, "source": how}
        docs[key] = {"format": "opsched-cost-profile/1", "gpu": key, "spec": spec.to_dict(),
                     "time_unit": "us", "kernel_floor": floor, "curves": curves}  # fmt: skip
        if model.family_floors:
            docs[key]["family_floors"] = {
                fam: dict(zip(("us", "source"), floor_of(by_gpu, key, arch), strict=True))
                for fam, by_gpu in sorted(model.family_floors.items())
            }
    return docs


def fit_profiles(
    root: str | Path | None = None,
    out_dir: str | Path | None = None,
    extra: Sequence[str | Path] = (),
    progress: Callable[[str], None] | None = None,
) -> list[Path]:
    """Fit on the timing tables under ``root`` and write one profile JSON per GPU.

    ``out_dir`` defaults to the package's ``opsched/cost/profiles``; ``gpus.json`` (the spec
    table) is written there from ``root/gpu_specs.csv``, and the fit already uses it, so a
    GPU added to that CSV gets a profile. ``extra`` are more timing tables (any schema of
    :mod:`opsched.cost.data`, e.g. rows of ``opsched cost collect`` on a new card) fitted
    with the built-in ones. Nothing is written unless the fit succeeds. Deterministic: the same
    data gives byte-identical files. Profiles written elsewhere are used by setting
    ``OPSCHED_PROFILES`` to their folder (:func:`opsched.cost.specs.profiles_dir`).
    ``progress``, if given, is called with a line at each stage (about 60 s in all on 2 cores).
    """
    import gzip
    import json
    import tempfile

    from opsched._files import read_text, write_bytes_atomic, write_text_atomic
    from opsched.cost.profile import _load
    from opsched.cost.profile_files import TREES_FILE, _load_trees
    from opsched.cost.specs import _load_specs, parse_specs_csv, profiles_from
    from opsched.cost.trees import TREES_FORMAT
    from opsched.datasets import dataset_path

    base = Path(root) if root is not None else dataset_path("kernel-timings")
    out = Path(out_dir) if out_dir is not None else Path(__file__).parent / "profiles"
    _check_out_dir(out)  # before the minute of fitting, not after it
    specs = parse_specs_csv(read_text(base / "gpu_specs.csv"), str(base / "gpu_specs.csv"))
    doc = {"format": "opsched-gpu-specs/1", "source": "datasets/kernel-timings/gpu_specs.csv",
           "gpus": [s.to_dict() for s in specs.values()]}  # fmt: skip
    specs_text = json.dumps(doc, indent=1) + "\n"
    files = (*FIT_FILES, *(str(Path(e).resolve()) for e in extra))
    # every table at once, before the reading starts: a folder lacking some (the H200's,
    # say) had failed on the first after 20 s of reading, naming that one only
    missing = [f for f in files if not (base / f).is_file()]
    if missing:
        raise InputError(
            f"{len(missing)} of the {len(files)} timing tables the fit reads are missing: "
            f"{', '.join(missing)} (copy the shipped datasets/kernel-timings, then add yours)",
            str(base),
        )
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "gpus.json").write_text(specs_text, encoding="utf-8")
        with profiles_from(tmp):
            say = progress or (lambda _: None)
            say(f"reading {len(files)} timing tables from {base}")
            data = load_fit_data(base, files=files, progress=progress)
            model = fit_model(data, progress=progress)
            docs = profile_docs(model, specs)
    _load_specs.cache_clear()
    # the last reading before the first write: a table that fails leaves the folder as it was
    from opsched.cost.data import read_table
    from opsched.cost.kernel_shares import SHARE_TABLES, SHARES_FILE, _read, fit_shares

    shares = fit_shares([read_table(base / f) for f in SHARE_TABLES if (base / f).exists()])
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(specs_text, out / "gpus.json")
    written = [out / "gpus.json"]
    trees_path = out / TREES_FILE
    (out / "trees.json").unlink(missing_ok=True)  # the uncompressed file of earlier versions
    if model.trees:
        tdoc = {"format": TREES_FORMAT,
                "families": {f: e.to_dict() for f, e in sorted(model.trees.items())}}  # fmt: skip
        text = json.dumps(tdoc, separators=(",", ":")) + "\n"
        # mtime 0: the same trees give the same bytes
        write_bytes_atomic(gzip.compress(text.encode(), compresslevel=9, mtime=0), trees_path)
        written.append(trees_path)
    else:
        trees_path.unlink(missing_ok=True)
    for key, prof in docs.items():
        path = out / f"{key}.json"
        write_text_atomic(json.dumps(prof, indent=1, sort_keys=True) + "\n", path)
        written.append(path)
    share_doc = {"format": "opsched-kernel-shares/1", "tables": list(SHARE_TABLES),
                 "shares": shares}  # fmt: skip
    write_text_atomic(json.dumps(share_doc, indent=1) + "\n", out / SHARES_FILE)
    written.append(out / SHARES_FILE)
    _read.cache_clear()
    _load.cache_clear()
    _load_trees.cache_clear()
    return written


def _check_out_dir(out: Path) -> None:
    """Raise if ``out`` cannot become a folder: it, or the nearest of its parents that
    exists, is not a folder."""
    p = out
    while not p.exists() and p != p.parent:
        p = p.parent
    if not p.is_dir():
        raise InputError(f"{str(p)!r} is a file, not a folder", str(out))
