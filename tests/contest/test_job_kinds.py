"""One declaration per job kind: ``contest/job_kinds.py`` states each kind's name, queue, rank and label, and
``Job.kind``'s choices, the queue table, the ranks and the console's labels are derived from it.

These tests fail when a kind is declared a second way: a kind without its queue, rank or label, a choice
nobody handles, a handler of an undeclared kind, a model state the migrations do not hold, or code that
names a kind by a string literal instead of its constant (``job_kinds.CLOSE_SET``)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import translation
from django.utils.functional import Promise

from contest import job_kinds, queues
from contest.models import Job
from contest.services import jobs

ROOT = Path(__file__).resolve().parents[2]

#: String literals that equal a kind's name but do not name a job kind: (file, literal, where it stands).
NOT_KINDS = {
    ("contest/services/generation.py", "generate_round", "call:audit.record"): "the audit log's action",
    ("contest/services/results.py", "rescore", "call:audit.record"): "the audit log's action",
    ("contest/services/audit.py", "generate_round", "dict-key"): "the audit log's action, with its label",
    ("contest/services/audit.py", "rescore", "dict-key"): "the audit log's action, with its label",
    ("contest/services/results.py", "judge_attacks", "dict-key"): "the count of judge-attack jobs queued",
    ("contest/services/parameters.py", "judge_attacks", "dict-key"): "the contest's field of that name",
    ("contest/web/views.py", "judge_attacks", "dict-key"): "the contest's field of that name",
    ("contest/web/console.py", "rescore", "compare:action"): "the console form's action",
    ("contest/models.py", "judge_attacks", "keyword:related_name"): "the public set's judge attack results",
    ("contest/services/simulation.py", "judge_attacks", "call:Count"): "the relation of that name (models.py)",
}


def test_every_kind_is_declared_with_a_queue_a_rank_and_a_translatable_label():
    assert len(job_kinds.DECLARED) >= 14
    for name, kind in job_kinds.DECLARED.items():
        assert kind.name == name and re.fullmatch(r"[a-z_]+", name), kind
        assert kind.queue in queues.NAMES, kind
        assert kind.rank in job_kinds.RANKS, kind
        assert isinstance(kind.label, Promise) and str(kind.label), kind  # gettext_lazy: translated when shown


def test_a_kind_declared_twice_or_without_its_queue_is_refused():
    with pytest.raises(ValueError, match="declared twice"):
        job_kinds._declare(job_kinds.CLOSE_SET, queue=queues.JUDGE, rank=job_kinds.CLOSE, label="again")
    with pytest.raises(ValueError, match="queue"):
        job_kinds._declare("unheard_of", queue="nowhere", rank=job_kinds.CLOSE, label="x")
    assert "unheard_of" not in job_kinds.DECLARED


def test_the_queue_table_ranks_and_choices_are_derived_from_the_declarations():
    declared = job_kinds.DECLARED.values()
    assert job_kinds.KINDS == tuple(job_kinds.DECLARED)
    assert job_kinds.QUEUE_OF == {k.name: k.queue for k in declared}
    assert sorted(k for kinds in job_kinds.BY_QUEUE.values() for k in kinds) == sorted(job_kinds.KINDS)
    assert all(job_kinds.rank(k.name) == k.rank for k in declared)
    field = Job._meta.get_field("kind")
    assert [value for value, _label in field.choices] == list(job_kinds.KINDS)
    assert Job(kind=job_kinds.CLOSE_SET).get_kind_display() == str(job_kinds.DECLARED["close_set"].label)


def test_every_declared_kind_is_handled_and_every_handler_is_of_a_declared_kind():
    assert set(jobs._REGISTRY) == set(job_kinds.KINDS)
    with pytest.raises(ValueError, match="declare it in contest.job_kinds"):
        jobs.handles("unheard_of")


def test_every_label_has_its_japanese_translation():
    with translation.override("ja"):
        untranslated = [k.name for k in job_kinds.DECLARED.values() if str(k.label) == k.label._args[0]]
    assert not untranslated, untranslated


@pytest.mark.django_db
def test_the_migrations_hold_the_choices():
    call_command("makemigrations", "contest", "--check", "--dry-run", verbosity=0)  # SystemExit(1) if not


def _context(node: ast.Constant, parent: ast.AST) -> str:
    """Where a string literal stands: the call it is the first argument of, a keyword, a dict key, ..."""
    if isinstance(parent, ast.Call) and parent.args and parent.args[0] is node:
        return f"call:{ast.unparse(parent.func)}"
    if isinstance(parent, ast.keyword):
        return f"keyword:{parent.arg}"
    if isinstance(parent, ast.Dict) and node in parent.keys:
        return "dict-key"
    if isinstance(parent, ast.Compare):
        return f"compare:{ast.unparse(parent.left)}"
    return type(parent).__name__


def kind_literals(source: str) -> list[tuple[str, str, int]]:
    """(literal, context, line) of every string literal of ``source`` that equals a declared kind's name."""
    tree = ast.parse(source)
    found = []
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            if isinstance(child, ast.Constant) and child.value in job_kinds.DECLARED:
                found.append((child.value, _context(child, parent), child.lineno))
    return sorted(found, key=lambda f: f[2])


def _code_files():
    """The application's modules (scoring and synth know no jobs; benchmarks and tests may spell a kind out)."""
    for path in sorted((ROOT / "contest").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        # the declaration itself; migrations are frozen history (they list the choices as they were)
        if rel != "contest/job_kinds.py" and "/migrations/" not in rel:
            yield rel, path


def test_no_code_names_a_job_kind_by_a_string_literal():
    seen, strays = set(), []
    for rel, path in _code_files():
        for literal, context, line in kind_literals(path.read_text()):
            if (rel, literal, context) in NOT_KINDS:
                seen.add((rel, literal, context))
            else:
                strays.append(f"{rel}:{line}: {literal!r} ({context})")
    assert not strays, f"name these kinds by their constant in contest.job_kinds: {strays}"
    assert seen == set(NOT_KINDS), f"no longer found, drop from NOT_KINDS: {set(NOT_KINDS) - seen}"


def template_kind_tests(text: str) -> list[str]:
    """Every test of a kind against a literal in template ``text`` (``job.kind == "close_set"``)."""
    kinds = "|".join(job_kinds.KINDS)
    return [m.group(0) for m in re.finditer(rf"kind\s*(?:==|!=|in)\s*[\"']({kinds})[\"']", text)]


def test_no_template_compares_a_job_kind_with_a_string():
    hits = [f"{p.relative_to(ROOT)}: {hit}" for p in sorted((ROOT / "templates").rglob("*.html"))
            for hit in template_kind_tests(p.read_text())]
    assert not hits, hits


def test_the_scans_see_a_kind_named_by_a_string():
    source = ('jobs.create_job("close_set", x=1)\nJob.objects.filter(kind="rescore")\n'
              'KINDS = ("score_attack",)\nif job.kind == "build_bundle": pass\n')
    assert [(literal, context) for literal, context, _line in kind_literals(source)] == [
        ("close_set", "call:jobs.create_job"), ("rescore", "keyword:kind"), ("score_attack", "Tuple"),
        ("build_bundle", "compare:job.kind")]
    assert template_kind_tests('{% if job.kind == "close_set" %}{% url "x" "rescore" %}') == ['kind == "close_set"']
