"""``tensoropt.nn.rnn_cell``: TensorFlow 1.x's ``tf.nn.rnn_cell`` names."""

from tensoropt.ops.rnn_ops import GRUCell, LSTMCell, LSTMStateTuple, MultiRNNCell

BasicLSTMCell = LSTMCell

__all__ = ["LSTMCell", "BasicLSTMCell", "GRUCell", "LSTMStateTuple", "MultiRNNCell"]
