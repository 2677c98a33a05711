"""``tensoropt.models``: the model zoo, written with the public API as a user would.

Each model is a plain function of size parameters (batch, widths, depths, sequence,
vocabulary...) with named presets: "paper" (the TensorOpt paper's Table 1 shapes, or
PaSE's benchmark shapes) and "tiny" (trains a step in well under a second on CPU), and
"small" for some. Building records into the current default graph; the caller resets it.

Parameter sizes are stated in GiB (2**30 bytes): the papers' "GB" figures match GiB
(VGG16's 138.4M float32 parameters are 0.515 GiB against Table 1's 0.52).

Models (one module per family):

- TensorOpt Table 1 at batch 256: ``paper_rnn`` (lstm.py), ``paper_wide_resnet``
  (resnet.py), ``paper_transformer`` and Table 4's ``paper_transformer_s``
  (transformer.py), ``paper_vgg16`` (vgg.py). Their docstrings state the chosen widths.
- PaSE's benchmarks: ``alexnet`` (128), ``inception_v3`` (128), ``resnet101`` (128),
  ``rnnlm`` (64), ``pase_transformer`` (64).
- Small families for tiny runs: ``mlp``, ``cnn``, ``transformer`` (encoder only), ``lstm``.

``tensoropt.models.summary.summarize()`` gives each model's op count, parameter and
saved-activation bytes.

``generate_model(seed)`` (``generated.py``) records a small random model over the whole
op set instead, for parity fuzzing (``python -m tensoropt.bench fuzz`` and
``tests/parallel/test_generated_parity.py``); it is not in the named registry.

Usage::

    import tensoropt as to
    from tensoropt import models

    models.names()                           # ['alexnet', 'cnn', 'inception_v3', ...]
    to.reset_default_graph()
    spec = models.build("mlp", size="tiny", batch=8)
    spec.loss, spec.train_op, spec.inputs    # inputs: name -> placeholder
    feed = spec.feed(0)                      # random valid data (labels in range)
    print(models.describe("paper_transformer"))
"""

from tensoropt.models import (alexnet, cnn, inception, lstm, mlp, resnet,  # noqa: F401  (registers)
                              transformer, vgg)
from tensoropt.models._registry import (IntRange, ModelEntry, ModelSpec, UnknownModelError, build,
                                        describe, get_entry, names)
from tensoropt.models.generated import GeneratedModel, generate_model

__all__ = ["ModelSpec", "ModelEntry", "IntRange", "UnknownModelError", "build", "names", "describe",
           "get_entry", "TABLE1_PARAM_GIB", "PASE_BENCHMARKS", "generate_model", "GeneratedModel"]

#: TensorOpt paper, Table 1 (and Table 4 for Transformer-S): parameter sizes in GiB.
TABLE1_PARAM_GIB = {
    "paper_rnn": 108.0,
    "paper_wide_resnet": 7.3,
    "paper_transformer": 9.7,
    "paper_vgg16": 0.52,
    "paper_transformer_s": 4.8,
}

#: PaSE's five benchmarks and their batch sizes.
PASE_BENCHMARKS = {
    "alexnet": 128,
    "inception_v3": 128,
    "resnet101": 128,
    "rnnlm": 64,
    "pase_transformer": 64,
}
