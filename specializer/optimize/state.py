"""What a build's pipeline carries (BuildState) and what it may depend on besides (BuildContext).

A pass reads the kernel library, the CMSIS-NN it was built with and the target from the
context it is given, never from the environment: `pipeline.txt` and the context together
determine `optimized.ll`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specializer import timing
from specializer.inputs import Model
from specializer.library import cmsis, libjit
from specializer.llvm import packweights
from specializer.llvm.passes import ModuleState
from specializer.optimize.speclog import Specialized
from specializer.target import TARGET, Target


@dataclass(frozen=True)
class BuildContext:
    library: libjit.Library  # the libjit bitcode `link` links in
    cmsis_nn: cmsis.CmsisNN  # which CMSIS-NN the library was built with (relayout's int8 conv needs the shim)
    target: Target = TARGET

    @classmethod
    def default(cls, cmsis_nn_path: str | None = None) -> BuildContext:
        """The shim, or the checkout `cmsis_nn_path` (else $SPECIALIZER_CMSIS_NN) names: the one
        place a build reads the environment."""
        with timing.phase("kernel library (libjit)"):
            nn = cmsis.cmsis_nn(cmsis_nn_path)
            return cls(libjit.build(nn=nn), nn)


@dataclass
class BuildState(ModuleState):
    """The IR and what the steps report for the specialization log."""
    context: BuildContext | None = None  # for `link` and `relayout`
    model: Model | None = None  # for model passes and `link`
    shapes: dict = field(default_factory=dict)  # model tensors -> (dtype, shape): see `specialize`
    linked: str | None = None  # the module right after `link`, with its use-list order
    spec: Specialized | None = None
    relaid: tuple = ()
    aliases: tuple = ()
    zero_weights: int = 0
    # from `link` on, the model's float weights are byte strings (packweights.py): a text a
    # person reads (linked.ll, specialized.ll, optimized.ll) is `typed`
    packed: dict = field(default_factory=dict)

    def typed(self, text: str) -> str:
        return packweights.unpack(text, self.packed)

    @classmethod
    def of_model(cls, model: Model, context: BuildContext) -> BuildState:
        """A pipeline's start on a model, as a build starts."""
        return cls(model.path.name, str(model.path), text=model.text, context=context, model=model,
                   shapes=dict(model.shapes))
