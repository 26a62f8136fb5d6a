"""A floor per public function: a suite that leaves a function of the
contract untested does not pass, whatever its overall score.

The catalog's [module.grading] names each public function (or class) of the
contract with the share of its counted mutants a suite must catch:

    floors = { rope_parameters = 0.5, rope_spec = 0.5 }

A mutant belongs to the public name it sits in: "rope_spec" and
"RopeSpec.__post_init__" belong to rope_spec and RopeSpec; mutants of
private helpers ("_yarn") and of module-level code belong to no floor (they
count in the score like any other).  Pitfalls are graded apart: not here, nor in the score.

    needed = ceil(share x counted)      met = caught >= needed

    floors = function_floors(grading.floors, result.mutants, session.contract)
    [str(f) for f in floors if not f.met]   # ["rope_spec: 0 of 73 caught (at least 37 needed)"]
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass

from ol.core.errors import OlError


@dataclass(frozen=True)
class Floor:
    function: str
    share: float        # of the function's counted mutants, as the catalog says
    caught: int
    counted: int

    @property
    def needed(self) -> int:
        return math.ceil(self.share * self.counted - 1e-9)

    @property
    def met(self) -> bool:
        return self.caught >= self.needed

    def __str__(self) -> str:
        return floor_line(self.as_dict())

    def as_dict(self) -> dict:
        """What --json prints for it."""
        return {"function": self.function, "share": self.share, "caught": self.caught, "counted": self.counted,
                "needed": self.needed, "met": self.met}

    @staticmethod
    def from_dict(entry: dict) -> Floor:
        return Floor(str(entry["function"]), float(entry["share"]), int(entry["caught"]), int(entry["counted"]))


def floor_line(floor: dict) -> str:
    """A floor as every report says it ({"function", "caught", "counted",
    "needed"} as --json gives it): "rope_spec: 0 of 73 caught (at least 37 needed)"."""
    return f"{floor['function']}: {floor['caught']} of {floor['counted']} caught (at least {floor['needed']} needed)"


def function_floors(floors: dict[str, float], mutants: list[dict],
                    contract: tuple[str, str] | None = None) -> list[Floor]:
    """Each floor of the catalog against the counted mutants ({"function",
    "killed", ...} as CheckResult.mutants holds them), in the catalog's order.
    contract: (path, .pyi text), to refuse a floor on a name it does not define."""
    if contract is not None:
        check_floors_name_the_contract(floors, contract[1], contract[0])
    caught = {name: 0 for name in floors}
    counted = {name: 0 for name in floors}
    for mutant in mutants:
        owner = str(mutant["function"]).split(".", 1)[0]
        if owner in counted:
            counted[owner] += 1
            caught[owner] += bool(mutant["killed"])
    return [Floor(name, share, caught[name], counted[name]) for name, share in floors.items()]


def public_names(contract: str) -> list[str]:
    """The public functions and classes a contract (.pyi text) defines, in its order."""
    defined = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return [node.name for node in ast.parse(contract).body if isinstance(node, defined) and not node.name.startswith("_")]


def check_floors_name_the_contract(floors: dict[str, float], contract: str, where: str) -> None:
    """Raise OlError when the catalog gives a floor to a name the contract does not define."""
    public = public_names(contract)
    unknown = [name for name in floors if name not in public]
    if unknown:
        raise OlError(f"{where}: floors name {', '.join(unknown)}, which the contract does not define; "
                      f"its public functions and classes are {', '.join(public) or 'none'}")
