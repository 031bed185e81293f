"""The method registry: every extraction attack, detector (and, from the next issues, probe
and tracer) by name, with declarative metadata.

A method's metadata (:class:`MethodInfo`: paper and section, the access it needs, the record
fields or score names it writes, a call estimate) is declared **in the method's own module**;
this registry holds one line per method: its name, kind, the family a command selects it by
(``detect --detectors`` families, ``extract --methods`` names) and the ``module:attr`` path
of its metadata. The path is resolved with :mod:`importlib` only when the metadata is asked
for, so this module imports nothing above the foundations and naming methods (CLI choices)
imports no method code. An attribute that is a mapping (e.g. the PEARL metadata of every
perturbation) is looked up by the method's name.

Another package adds methods as ``recitation.methods`` entry points (:data:`REGISTRY`,
:mod:`recitation.registry`); their metadata is imported when the methods are listed, to
learn their kind and family. A family's own options are a pydantic model on its metadata
(:attr:`MethodInfo.option_model`, :mod:`recitation.method_options`).

Command-line choices, call estimates, the ``recitation methods`` listing and the method
table of docs/methods.md derive from here; tests/test_methods_registry.py runs every
registered method through its job. docs/adding-a-method.md walks through adding one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from recitation.errors import ConfigError
from recitation.registry import PlugIn, Registry, import_path, unknown

if TYPE_CHECKING:
    from pydantic import BaseModel


class Access(StrEnum):
    """What a method needs of the audited model and its surroundings."""

    GENERATE = "generate"
    LOGPROBS = "logprobs"
    FULL_DISTRIBUTION = "full_distribution"
    TOKENIZER = "tokenizer"
    CORPUS_INDEX = "corpus_index"
    HELPER_MODEL = "helper_model"
    JUDGE_MODEL = "judge_model"
    REFERENCE_MODEL = "reference_model"
    EMBEDDINGS = "embeddings"


ACCESS_DESCRIPTIONS: dict[Access, str] = {
    Access.GENERATE: "black-box generation (chat or completion)",
    Access.LOGPROBS: "token log-probabilities (capabilities.logprobs: Model.score)",
    Access.FULL_DISTRIBUTION: ("the vocabulary mean and std of log p at every position "
                               "(capabilities.full_distribution)"),
    Access.TOKENIZER: ("the target's own tokenizer (capabilities.tokenizer; for a served "
                       "model, name the model's tokenizer with --tokenizer PATH)"),
    Access.CORPUS_INDEX: "an index of a reference corpus",
    Access.HELPER_MODEL: "a helper model (summaries, feedback hints; default: the target)",
    Access.JUDGE_MODEL: "a judge model (verifier; default: the helper)",
    Access.REFERENCE_MODEL: "a second, reference model (params.reference_model)",
    Access.EMBEDDINGS: "sentence embeddings and torch (pip install 'recitation[embed]')",
}

Kind = Literal["extraction", "detector", "probe", "tracer"]
KINDS: tuple[Kind, ...] = ("extraction", "detector", "probe", "tracer")


@dataclass(frozen=True)
class Calls:
    """Model calls one unit of work of a method needs: per sample (detectors, probes) or, at
    most, per event (extraction methods).

    ``score`` names the texts the target scores, so methods that share one (every white-box
    score reads the sample's plain scores, ``"text"``) count it once when combined."""

    generate: int = 0
    score: frozenset[str] = frozenset()
    helper: int = 0
    judge: int = 0
    reference: int = 0

    def __add__(self, other: Calls) -> Calls:
        """Both methods in one run: shared scored texts once, other calls as the larger."""
        return Calls(max(self.generate, other.generate), self.score | other.score,
                     max(self.helper, other.helper), max(self.judge, other.judge),
                     max(self.reference, other.reference))

    @property
    def total(self) -> int:
        return self.generate + len(self.score) + self.helper + self.judge + self.reference

    def to_dict(self) -> dict[str, int]:
        return {"generate": self.generate, "score": len(self.score), "helper": self.helper,
                "judge": self.judge, "reference": self.reference}


@dataclass(frozen=True)
class AuditUse:
    """How ``recitation audit`` uses a method family, declared on its methods' metadata (every
    method of a family declares the same, or none): the audit, its verdict, the report and
    ``compare`` read this, so a family that declares it is audited with no other edit.

    ``run``: the audit run it goes in (``prefix_probe``, ``recap``, ``detect``: one detect
    run holds every detector family chosen; ``trace``). ``order``: its place among the
    audit's families. ``primary``: for a detector, the scores that stand for the family, the
    first one a run has (fixed before any run, so a verdict does not pick the best of many);
    ``verdict``: whether that score is one of the verdict's Bonferroni-corrected tests (else
    it is calibrated and reported, not counted). ``off``: the audit setting that turns the
    family off when false or 0, and ``off_flag`` how a user says so. ``min_controls``: the
    controls the family needs at least (else it is left out, with the reason).
    ``catalogue``: the family's rank as a catalogue's statistic, by its true-positive rate at
    1% FPR on the organism benchmark (docs/leaderboard.md); 0: never the statistic."""

    run: Literal["prefix_probe", "recap", "detect", "trace", "continue"]
    order: int
    primary: tuple[str, ...] = ()
    verdict: bool = True
    off: str = ""
    off_flag: str = ""
    min_controls: int = 0
    catalogue: int = 0  # a detector's rank as a catalogue's statistic (1 first; 0: never)
    why: str = ""  # why it is, or is not, in the verdict (docs and the methods table)


CallEstimate = Callable[[Mapping[str, Any]], Calls]
"""Calls per unit from the job's parameters (a dict, defaults filled: ``params_dict``)."""


@dataclass(frozen=True)
class MethodInfo:
    """A method's declarative metadata (declared in the method's module)."""

    name: str
    kind: Kind
    title: str  # as the paper names it, e.g. "Min-K%"
    paper: str  # "recap.md §3.5" (a file of ../shared/papers) or "Shi et al. 2024 (...)"
    access: frozenset[Access]
    writes: tuple[str, ...]  # record fields / score names it writes
    calls: CallEstimate
    calls_formula: str  # the estimate in words, per unit
    job: str  # the job that runs it: "detect", "extract", "prefix_probe"
    family: str  # what a command selects it by (detect family, extract method name)
    summary: str
    runner: str = ""  # "module:attr" of its plug-in, when the job runs plug-ins
    unit: Literal["sample", "event", "passage", "book"] = "sample"
    options: tuple[str, ...] = field(default=())  # the job parameters it reads
    select: str = ""  # how a command selects it, when more than its family (PEARL)
    audit: AuditUse | None = None  # how an audit uses its family (None: audits skip it)
    # a pydantic model of the family's own options, given as --detector-option
    # FAMILY.key=value and read by its runner as ctx.options(family) (a plug-in's options:
    # every method of the family names the same model, or only one names it)
    option_model: type[BaseModel] | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"method name {self.name!r} is not an identifier")
        if self.kind not in KINDS:
            raise ValueError(f"method {self.name}: unknown kind {self.kind!r}; use {KINDS}")
        bad = [a for a in self.access if not isinstance(a, Access)]
        if bad or not self.access:
            raise ValueError(f"method {self.name}: access must be a non-empty set of Access "
                             f"values, got {sorted(map(str, self.access))}")
        if not (self.paper and self.writes and self.calls_formula and self.summary):
            raise ValueError(f"method {self.name}: paper, writes, calls_formula and summary "
                             "are required")

    @property
    def selected_by(self) -> str:
        """How a command runs it, e.g. ``detect --detectors whitebox``."""
        if self.select:
            return self.select
        return {"detect": f"detect --detectors {self.family}",
                "extract": f"extract --methods {self.name}"}.get(self.job, f"job {self.job}")

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``recitation methods --json``)."""
        return {"name": self.name, "kind": self.kind, "title": self.title,
                "paper": self.paper, "access": sorted(a.value for a in self.access),
                "writes": list(self.writes), "calls": self.calls_formula,
                "unit": self.unit, "job": self.job, "family": self.family,
                "selected_by": self.selected_by,
                "options": list(self.options) + self.option_keys, "summary": self.summary,
                "audit": self.audit_text}

    @property
    def option_keys(self) -> list[str]:
        """``FAMILY.key`` of each option of :attr:`option_model`."""
        fields = self.option_model.model_fields if self.option_model is not None else {}
        return [f"{self.family}.{k}" for k in fields]

    @property
    def audit_text(self) -> str:
        """How an audit uses it, in words (the methods table)."""
        a = self.audit
        if a is None:
            return "no"
        if not a.primary:
            return f"yes ({a.run} run)"
        score = " / ".join(a.primary)
        return f"yes; {'verdict' if a.verdict else 'reported'}: {score}"


class Entry(NamedTuple):
    kind: Kind
    family: str
    path: str  # module:attr of the MethodInfo (or of a mapping name -> MethodInfo)


def _x(path: str) -> Entry:
    return Entry("extraction", "", path)


def _d(family: str, path: str) -> Entry:
    return Entry("detector", family, path)


_WB, _PEARL = "recitation.detect.whitebox:METHODS", "recitation.detect.pearl:METHODS"
_AGENTS = "recitation.extract.agents:METHODS"

METHODS: dict[str, Entry] = {
    # extraction: RECAP and its baselines (recitation extract --methods)
    "prefix": _x(_AGENTS),
    "dsp": _x(_AGENTS),
    "dsp_jailbreak": _x(_AGENTS),
    "recap": _x(_AGENTS),
    "recap_filter": _x("recitation.extract.filter:RECAP_FILTER"),
    "continue": _x("recitation.extract.continue_book:CONTINUE_METHOD"),  # its own job
    # probes
    "prefix_probe": Entry("probe", "prefix_probe",
                          "recitation.extract.prefix_probe:PREFIX_PROBE"),
    # book memorization probes and the quotation-attribution task (recitation probe / task)
    "name_cloze": Entry("probe", "name_cloze", "recitation.probes.name_cloze:NAME_CLOZE"),
    "csg": Entry("probe", "csg", "recitation.probes.csg:CSG"),
    "quote_attribution": Entry("probe", "quote_attribution",
                               "recitation.probes.quote_attribution:QUOTE_ATTRIBUTION"),
    "contamination": Entry("probe", "contamination",
                           "recitation.probes.contamination:CONTAMINATION"),
    # detectors (recitation detect --detectors FAMILY)
    "loss": _d("whitebox", _WB),
    "zlib": _d("whitebox", _WB),
    "lowercase": _d("whitebox", _WB),
    "min_k": _d("whitebox", _WB),
    "min_k_pp": _d("whitebox", _WB),
    "gap_k": _d("whitebox", _WB),
    "reference": _d("whitebox", _WB),
    "recall": _d("recall", "recitation.detect.recall:RECALL"),
    "dcpdd": _d("dcpdd", "recitation.detect.dcpdd:DCPDD"),
    "samia": _d("samia", "recitation.detect.samia:SAMIA"),
    "neighbourhood": _d("neighbourhood", "recitation.detect.neighbour:NEIGHBOURHOOD"),
    "ezmia": _d("ezmia", "recitation.detect.ezmia:EZMIA"),
    "camia": _d("camia", "recitation.detect.camia:CAMIA"),
    "pearl_bitflip": _d("pearl", _PEARL),
    "pearl_synonym": _d("pearl", _PEARL),
    "pearl_whitespace": _d("pearl", _PEARL),
    "pearl_char_swap": _d("pearl", _PEARL),
    "pearl_case_flip": _d("pearl", _PEARL),
    "pearl_bitflip_tokens": _d("pearl", _PEARL),
    # tracers (recitation trace)
    "simpletrace": Entry("tracer", "simpletrace", "recitation.trace.job:SIMPLETRACE"),
    # PROPME's prompt sets (recitation propme --sets ...)
    "propme_generic": Entry("probe", "propme", "recitation.trace.propme_job:METHODS"),
    "propme_specific": Entry("probe", "propme", "recitation.trace.propme_job:METHODS"),
    "propme_prefix": Entry("probe", "propme", "recitation.trace.propme_job:METHODS"),
}
"""name -> (kind, family, metadata path). An extraction method's family is its name."""


def _from_plugin(name: str, plug_in: PlugIn) -> Entry:
    """A plug-in's registry line, from its metadata (imported now: the kind and family a
    command selects it by are declared there)."""
    info = _info(name, import_path(plug_in.path, "method", plug_in), plug_in.path, plug_in)
    return Entry(info.kind, info.family, plug_in.path)


REGISTRY: Registry[Entry] = Registry("method", METHODS, _from_plugin)
"""The built-in :data:`METHODS`, then the ``recitation.methods`` entry points of other
packages (:mod:`recitation.registry`)."""


def _entry(name: str) -> Entry:
    return REGISTRY.entry(name)


def family_of(name: str) -> str:
    entry = _entry(name)
    return entry.family or name


def names(kind: Kind | None = None) -> list[str]:
    """Registered method names (of one kind), in registry order; imports no built-in method
    (a plug-in's metadata is imported to learn its kind)."""
    return [n for n, e in REGISTRY.entries().items() if kind is None or e.kind == kind]


def families(kind: Kind) -> list[str]:
    """What a command selects methods of ``kind`` by, in registry order."""
    out: list[str] = []
    for n in names(kind):
        if (f := family_of(n)) not in out:
            out.append(f)
    return out


def check_family(kind: Kind, family: str, what: str) -> str:
    """``family`` when registered for ``kind``, else a ConfigError with a "did you mean"."""
    known = families(kind)
    if family not in known:
        raise unknown(kind, family, known, what)
    return family


def origin(name: str) -> PlugIn | None:
    """The plug-in package that registers method ``name`` (None: recitation's own)."""
    return REGISTRY.origin(name)


def load_attr(path: str) -> Any:
    """The object at ``module:attr`` (imported now)."""
    return import_path(path, "method")


def _info(name: str, obj: Any, path: str, plug_in: PlugIn | None = None) -> MethodInfo:
    if isinstance(obj, Mapping):
        obj = obj.get(name)
    if not isinstance(obj, MethodInfo) or obj.name != name:
        where = f"{plug_in}" if plug_in else f"'{path}'"
        raise ConfigError(f"method registry: {where} holds no metadata for '{name}'")
    return obj


def method(name: str) -> MethodInfo:
    """The metadata of method ``name`` (imports its module); unknown names: did you mean."""
    entry = _entry(name)
    obj = _info(name, REGISTRY.load(name, entry.path), entry.path, origin(name))
    if obj.kind != entry.kind or obj.family != family_of(name):
        raise ConfigError(f"method registry: '{name}' is registered as {entry.kind} "
                          f"'{family_of(name)}' but its module declares {obj.kind} "
                          f"'{obj.family}'")
    return obj


def all_methods(kind: Kind | None = None) -> list[MethodInfo]:
    return [method(n) for n in names(kind)]


def family_methods(kind: Kind, family: str) -> list[MethodInfo]:
    return [method(n) for n in names(kind) if family_of(n) == family]


def plugin_of(kind: Kind, family: str) -> Any:
    """The plug-in object that runs ``family`` (``MethodInfo.runner``), or None."""
    infos = [m for m in family_methods(kind, family) if m.runner]
    paths = {m.runner for m in infos}
    if len(paths) > 1:
        raise ConfigError(f"method registry: family '{family}' has several runners {paths}")
    return import_path(paths.pop(), "method", origin(infos[0].name)) if paths else None


def params_dict(params: Any) -> dict[str, Any]:
    """A job's parameters as a plain dict (a pydantic model is dumped)."""
    dump = getattr(params, "model_dump", None)
    if callable(dump):
        out: dict[str, Any] = dump()
        return out
    return dict(params)


def estimate(methods: Iterable[MethodInfo], params: Any) -> Calls:
    """The calls per unit of these methods run together (see :meth:`Calls.__add__`)."""
    p = params_dict(params)
    total = Calls()
    for m in methods:
        total = total + m.calls(p)
    return total


def model_access(capabilities: Any) -> set[Access]:
    """What a backend's :class:`~recitation.models.base.Capabilities` offer."""
    flags = {Access.GENERATE: capabilities.chat or capabilities.completion,
             Access.LOGPROBS: capabilities.logprobs,
             Access.FULL_DISTRIBUTION: capabilities.full_distribution,
             Access.TOKENIZER: getattr(capabilities, "tokenizer", False)}
    return {a for a, ok in flags.items() if ok}


def require_access(method_names: Iterable[str], capabilities: Any, backend: str, *,
                   also: Iterable[Access] = ()) -> None:
    """ConfigError naming what is missing when a method needs more than the backend's
    capabilities (and ``also``: what the run provides besides the target) offer."""
    have = model_access(capabilities) | set(also)
    for name in method_names:
        if missing := missing_access(method(name), have):
            raise ConfigError(describe_missing(name, missing,
                                               f"backend '{backend}' does not offer it"))


def missing_access(info: MethodInfo, available: Iterable[Access]) -> list[Access]:
    have = set(available)
    return sorted((a for a in info.access if a not in have), key=list(Access).index)


def describe_missing(name: str, missing: Iterable[Access], where: str) -> str:
    """E.g. "dcpdd needs the target's own tokenizer (...): backend 'x' has none"."""
    needs = "; ".join(f"{a.value}: {ACCESS_DESCRIPTIONS[a]}" for a in missing)
    return f"{name} needs {needs}; {where}"


def markdown_table(kind: Kind | None = None, *, plugins: bool = True) -> str:
    """The method table of docs/methods.md (``recitation methods --markdown``; without the
    plug-ins of other packages where ``plugins`` is false: the docs' table)."""
    rows = ["| method | kind | selected by | paper | access | writes | calls | in an audit |",
            "|---|---|---|---|---|---|---|---|"]
    for m in all_methods(kind):
        if not plugins and origin(m.name) is not None:
            continue
        writes = ", ".join(f"`{w}`" for w in m.writes)
        access = ", ".join(sorted(a.value for a in m.access))
        rows.append(f"| `{m.name}` ({m.title}) | {m.kind} | `{m.selected_by}` | {m.paper} "
                    f"| {access} "
                    f"| {writes} | per {m.unit}: {m.calls_formula} | {m.audit_text} |")
    return "\n".join(rows) + "\n"


class AuditFamily(NamedTuple):
    kind: Kind
    family: str
    use: AuditUse
    methods: list[MethodInfo]


def audit_families() -> list[AuditFamily]:
    """Every family an audit can run (its methods declare :class:`AuditUse`), in the order
    they declare; a family whose methods declare different uses is refused."""
    found: dict[tuple[Kind, str], list[MethodInfo]] = {}
    for m in all_methods():
        if m.audit is not None:
            found.setdefault((m.kind, m.family), []).append(m)
    out = []
    for (kind, family), infos in found.items():
        uses = {m.audit for m in infos if m.audit is not None}
        if len(uses) > 1:
            raise ConfigError(f"method registry: the methods of family '{family}' declare "
                              "different audit uses; declare one for the family")
        out.append(AuditFamily(kind, family, uses.pop(), family_methods(kind, family)))
    return sorted(out, key=lambda f: f.use.order)


def verdict_scores() -> dict[str, tuple[str, ...]]:
    """Detector family -> the scores that stand for it in an audit's verdict (first present)."""
    return {f.family: f.use.primary for f in audit_families()
            if f.kind == "detector" and f.use.primary and f.use.verdict}


def reported_scores() -> dict[str, tuple[str, ...]]:
    """Detector family -> its primary scores, reported (calibrated) but not in the verdict."""
    return {f.family: f.use.primary for f in audit_families()
            if f.kind == "detector" and f.use.primary and not f.use.verdict}
