"""The mutants a student's tests are graded against.

Generated mutants come from mutmut 3.8.1's generator (libcst), one per
mutation of the reference file, module-level ones included.  Two kinds are
set aside before grading:

  message-only   the mutation changes nothing but the arguments of a `raise
                 SomeError(...)`: an error message's wording is not part of
                 the contract, only the condition that raises;
  equivalent     listed, with a reason, in the module's reviewed file
                 (course/mutants/<id>/equivalent.toml), keyed by mutant id.

A mutant id is "<function>:<hash>": the qualified name of the function (or
class, or "<module>") the change sits in, and a hash of that name and the
changed lines alone, so it survives edits elsewhere in the file.

Pitfall mutants are hand-written: exact text edits of the reference, with a
misconception and a symptom, in course/mutants/<id>/pitfalls.toml.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import json
import os
import tempfile
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

from ol.core.errors import OlError
from ol.core.files import write_whole

MUTMUT_VERSION = "3.8.1"
MODULE_SCOPE = "<module>"


class MutantSetError(OlError):
    """The mutant set of a module cannot be built: a pitfall edit that no
    longer applies, an unreadable equivalent list, the wrong mutmut."""


@dataclass(frozen=True)
class Mutant:
    """One generated mutant of the reference file."""

    id: str          # "apply_rope:3f2a1b9c04"
    function: str    # "apply_rope", "RopeSpec.__post_init__", "RopeSpec", "<module>"
    diff: str        # unified diff against the reference, 2 lines of context
    source: str      # the whole mutated file
    message_only: bool
    line: int = 0    # the first line of the reference the mutation changes


@dataclass(frozen=True)
class Pitfall:
    """A hand-written mutant named by the misconception it embodies."""

    id: str
    misconception: str
    symptom: str
    caught_by: tuple[str, ...]   # course tests that must fail on it
    source: str


@dataclass(frozen=True)
class Equivalent:
    """A reviewed mutant that no test can tell from the reference."""

    id: str
    function: str
    reason: str
    diff: str


# ---- generated mutants -------------------------------------------------------


def generate_mutants(reference_source: str, filename: str = "reference.py", cache_dir: Path | None = None) -> list[Mutant]:
    """Every mutant mutmut generates from `reference_source`, in file order.

    Results are cached in `cache_dir` (default: the user's cache directory,
    never the repository) under a key made of everything that shapes them:
    the source, the mutmut and libcst versions, and this file's own code, so
    the slow part runs once per reference edit.
    """
    cache_file = cache_path(reference_source, cache_dir)
    try:
        return [Mutant(**entry) for entry in json.loads(cache_file.read_text())]
    except (OSError, ValueError, TypeError):
        pass
    mutants = _generate(reference_source, filename)
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        write_whole(cache_file, json.dumps([asdict(m) for m in mutants]))
    except OSError:
        pass  # a read-only home only costs time
    return mutants


def cache_path(reference_source: str, cache_dir: Path | None = None) -> Path:
    """Where the mutants of this reference text are cached."""
    key = hashlib.sha256(f"{_generator_fingerprint()}\n{reference_source}".encode()).hexdigest()[:24]
    return (cache_dir or _default_cache_dir()) / f"mutants-{key}.json"


def _generator_fingerprint() -> str:
    """mutmut's and libcst's versions and the text of this module."""
    from importlib.metadata import PackageNotFoundError, version

    versions = []
    for package in ("mutmut", "libcst"):
        try:
            versions.append(f"{package}=={version(package)}")
        except PackageNotFoundError:
            versions.append(f"{package} missing")
    own = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    return " ".join(versions) + " " + own


def _default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tinyllm-ol"


def _generate(source: str, filename: str) -> list[Mutant]:
    create_mutations, code_for_node, positions = _mutmut_generator(source, filename)
    module, mutations = create_mutations()
    line_starts = _line_offsets(source)
    scopes = _scope_by_line(source)
    reference_shape = _without_raise_arguments(source)
    mutants: list[Mutant] = []
    seen: dict[str, int] = {}
    for mutation in mutations:
        span = positions[mutation.original_node]
        start = line_starts[span.start.line - 1] + span.start.column
        end = line_starts[span.end.line - 1] + span.end.column
        mutated = source[:start] + code_for_node(mutation.mutated_node) + source[end:]
        function = scopes.get(span.start.line, MODULE_SCOPE)
        changed = "\n".join(_diff_lines(source, mutated, context=0))
        digest = hashlib.sha256(f"{function}\n{changed}".encode()).hexdigest()[:10]
        seen[digest] = seen.get(digest, 0) + 1
        suffix = "" if seen[digest] == 1 else f"-{seen[digest]}"
        mutants.append(Mutant(
            id=f"{function}:{digest}{suffix}",
            function=function,
            diff="\n".join(_diff_lines(source, mutated, context=2)),
            source=mutated,
            message_only=_without_raise_arguments(mutated) == reference_shape,
            line=span.start.line,
        ))
    return mutants


def _mutmut_generator(source: str, filename: str):
    """mutmut's generator, and libcst positions of the nodes it mutates.

    mutmut reads its configuration while generating; it gets an empty one from
    a temporary folder so nothing of the repository's is read or written."""
    try:
        import mutmut
        from mutmut.mutation.file_mutation import create_mutations
    except ImportError as error:
        raise MutantSetError(
            f"ol check needs mutmut=={MUTMUT_VERSION} ({error}); install it with "
            f"python -m pip install 'mutmut=={MUTMUT_VERSION}' (it is in the dev extra)"
        ) from None
    if getattr(mutmut, "__version__", MUTMUT_VERSION) != MUTMUT_VERSION:
        raise MutantSetError(
            f"ol check is built on mutmut {MUTMUT_VERSION}'s internals, but mutmut {mutmut.__version__} "
            f"is installed; run python -m pip install 'mutmut=={MUTMUT_VERSION}'"
        )
    import libcst
    from libcst.metadata import MetadataWrapper, WhitespaceInclusivePositionProvider

    def generate():
        here = os.getcwd()
        with tempfile.TemporaryDirectory() as scratch:
            Path(scratch, "pyproject.toml").write_text('[tool.mutmut]\nsource_paths = ["."]\n')
            os.chdir(scratch)
            try:
                module, mutations, _, _ = create_mutations(filename, source)
            finally:
                os.chdir(here)
        # unsafe_skip_copy: positions for the very nodes mutmut hands back
        positions.update(MetadataWrapper(module, unsafe_skip_copy=True).resolve(WhitespaceInclusivePositionProvider))
        return module, mutations

    positions: dict = {}
    empty = libcst.Module(body=[])
    return generate, empty.code_for_node, positions


def _line_offsets(source: str) -> list[int]:
    offsets, total = [], 0
    for line in source.splitlines(keepends=True):
        offsets.append(total)
        total += len(line)
    offsets.append(total)
    return offsets


def _scope_by_line(source: str) -> dict[int, str]:
    """line number -> qualified name of the innermost def or class around it
    (module-level lines are absent)."""
    scopes: dict[int, str] = {}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                for line in range(first, child.end_lineno + 1):
                    scopes[line] = name
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return scopes


def _diff_lines(before: str, after: str, context: int) -> list[str]:
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=context)
    return [line for line in lines if not line.startswith(("---", "+++", "@@"))]


class _StripRaiseArguments(ast.NodeTransformer):
    def visit_Raise(self, node: ast.Raise) -> ast.Raise:
        if isinstance(node.exc, ast.Call):
            node.exc.args, node.exc.keywords = [], []
        node.cause = None
        return node


def _without_raise_arguments(source: str) -> str | None:
    """The file's syntax tree with every `raise E(...)` reduced to `raise E()`;
    None if it does not parse."""
    try:
        return ast.dump(_StripRaiseArguments().visit(ast.parse(source)))
    except SyntaxError:
        return None


# ---- pitfalls and the reviewed equivalent list ----------------------------------


def load_pitfalls(path: Path, reference_source: str, reference_name: str, errors: list[str] | None = None) -> list[Pitfall]:
    """The pitfall mutants in `path` applied to the reference text.

    A pitfall whose edits do not apply raises MutantSetError, or, when an
    `errors` list is given, is described there and left out.
    """
    data = _read_toml(path)
    pitfalls = []
    for entry in data.get("pitfall", []):
        try:
            source = _apply_edits(entry, reference_source, reference_name, path)
        except MutantSetError as error:
            if errors is None:
                raise
            errors.append(str(error))
            continue
        pitfalls.append(Pitfall(
            id=entry.get("id", "?"), misconception=entry["misconception"], symptom=entry["symptom"],
            caught_by=tuple(entry.get("caught_by", ())), source=source,
        ))
    return pitfalls


def _apply_edits(entry: dict, reference_source: str, reference_name: str, path: Path) -> str:
    pid = entry.get("id", "?")
    source = reference_source
    for number, edit in enumerate(entry.get("edit", []), start=1):
        count = reference_source.count(edit["old"])
        if count != 1:
            raise MutantSetError(
                f"pitfall {pid} in {path}: edit {number}'s `old` text occurs {count} times in "
                f"{reference_name}, expected exactly once. The reference changed: update the edit so "
                f"it matches one place.\n--- old text:\n{edit['old']}"
            )
        source = source.replace(edit["old"], edit["new"])
    if source == reference_source:
        raise MutantSetError(f"pitfall {pid} in {path} changes nothing: give it at least one edit")
    return source


def overlapping_edits(path: Path, reference_source: str) -> list[str]:
    """Problems: pairs of edits of one pitfall whose `old` texts overlap in
    the reference (applied one after the other, the second would no longer
    find what it was written against)."""
    problems = []
    for entry in _read_toml(path).get("pitfall", []):
        spans = []
        for number, edit in enumerate(entry.get("edit", []), start=1):
            start = reference_source.find(edit.get("old", ""))
            if start >= 0 and edit.get("old"):
                spans.append((start, start + len(edit["old"]), number))
        spans.sort()
        for (_, end, first), (start, _, second) in zip(spans, spans[1:]):
            if start < end:
                problems.append(f"pitfall {entry.get('id', '?')} in {path}: edits {first} and {second} overlap in the "
                                "reference; make them touch separate text (or merge them into one edit)")
    return problems


def load_equivalents(path: Path) -> list[Equivalent]:
    """The reviewed equivalent mutants listed in `path` (none if it is absent)."""
    if not path.exists():
        return []
    data = _read_toml(path)
    entries = []
    for number, entry in enumerate(data.get("equivalent", []), start=1):
        missing = [key for key in ("id", "reason") if not entry.get(key)]
        if missing:
            raise MutantSetError(f"{path}: entry {number} needs {' and '.join(missing)}")
        entries.append(Equivalent(entry["id"], entry.get("function", ""), entry["reason"], entry.get("diff", "")))
    return entries


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise MutantSetError(f"cannot read {path}: {error}") from None


@dataclass(frozen=True)
class MutantSet:
    """What one module's grading runs against."""

    counted: tuple[Mutant, ...]           # generated, minus message-only and equivalent
    message_only: tuple[Mutant, ...]
    equivalent: tuple[Mutant, ...]
    stale_equivalents: tuple[Equivalent, ...]   # listed ids mutmut no longer generates
    pitfalls: tuple[Pitfall, ...]


def build_mutant_set(reference: Path, pitfalls: Path, equivalent: Path, cache_dir: Path | None = None,
                     pitfall_errors: list[str] | None = None) -> MutantSet:
    """The graded module's mutants, read from the catalog's paths.  A pitfall
    whose edits do not apply raises MutantSetError, or, given a
    pitfall_errors list, is described there and left out."""
    source = reference.read_text()
    generated = generate_mutants(source, reference.name, cache_dir)
    listed = {entry.id: entry for entry in load_equivalents(equivalent)}
    ids = {m.id for m in generated}
    return MutantSet(
        counted=tuple(m for m in generated if not m.message_only and m.id not in listed),
        message_only=tuple(m for m in generated if m.message_only),
        equivalent=tuple(m for m in generated if not m.message_only and m.id in listed),
        stale_equivalents=tuple(entry for entry in listed.values() if entry.id not in ids),
        pitfalls=tuple(load_pitfalls(pitfalls, source, str(reference), pitfall_errors)),
    )
