#!/usr/bin/env python3
"""convert_silero_vad.py ONNX OUT.safetensors — Silero VAD v6 (faster-whisper 1.2.1's
faster_whisper/assets/silero_vad_v6.onnx, MIT) to the safetensors file src/vad/silero.c reads.

The graph is checked op by op against the 16 kHz network src/vad/silero.c implements (reflection
pad 128|128, STFT as a conv with a fixed [258, 1, 256] basis at stride 128 whose first frame is
dropped, magnitude, four conv3 + ReLU layers with strides 1, 2, 2, 1, one LSTM with hidden size
128, ReLU, a 1x1 conv and a sigmoid); any other graph is refused rather than converted.

Tensor names follow the PyTorch module (silero-vad's `encoder.*`, `decoder.*`); the LSTM's ONNX
weights (gate order i, o, f, c; W, R and the two biases in one [1, 8H]) become PyTorch's
`decoder.rnn.weight_ih` [4H, 128], `weight_hh` [4H, H], `bias_ih` [4H], `bias_hh` [4H] in gate
order i, f, g, o. All tensors are float32, little-endian. Needs the `onnx` package (numpy with it).
"""

import json
import struct
import sys

import numpy as np
import onnx
from onnx import numpy_helper

H = 128

# name -> shape of every initializer the network uses (the graph's own names).
EXPECTED = {
    "encoder.feature_extractor.forward_basis_buffer": (258, 1, 256),
    "encoder.conv_layers.0.weight": (128, 129, 3), "encoder.conv_layers.0.bias": (128,),
    "encoder.conv_layers.1.weight": (64, 128, 3), "encoder.conv_layers.1.bias": (64,),
    "encoder.conv_layers.2.weight": (64, 64, 3), "encoder.conv_layers.2.bias": (64,),
    "encoder.conv_layers.3.weight": (128, 64, 3), "encoder.conv_layers.3.bias": (128,),
    "decoder.conv1d.weight": (1, 128, 1), "decoder.conv1d.bias": (1,),
}
OPS = ["Pad", "Unsqueeze", "Conv", "Slice", "Slice", "Pow", "Pow", "Add", "Sqrt",
       "Conv", "Relu", "Conv", "Relu", "Conv", "Relu", "Conv", "Relu", "Transpose",
       "LSTM", "Squeeze", "Relu", "Transpose", "Conv", "Sigmoid", "Reshape"]
CONV_STRIDES = [128, 1, 2, 2, 1, 1]


def die(msg):
    sys.exit("convert_silero_vad: %s" % msg)


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def check_graph(g, init):
    ops = [n.op_type for n in g.node]
    if ops != OPS:
        die("unexpected graph (ops %s); this converter knows Silero VAD v6 at 16 kHz" % ops)
    pad = g.node[0]
    if attrs(pad).get("mode") != b"reflect" or list(init[pad.input[1]]) != [0, 128, 0, 128]:
        die("front end: expected reflection padding of 128 samples each side")
    convs = [n for n in g.node if n.op_type == "Conv"]
    for n, stride in zip(convs, CONV_STRIDES):
        if list(attrs(n)["strides"]) != [stride]:
            die("%s: stride %s, expected %d" % (n.name, attrs(n)["strides"], stride))
    for n in g.node[3:5]:  # real and imaginary halves, both from STFT frame 1 on
        if int(init[n.input[1]][1]) != 1:
            die("front end: expected the STFT's first frame to be dropped")
    lstm = g.node[OPS.index("LSTM")]
    a = attrs(lstm)
    if a.get("hidden_size") != H or a.get("direction", b"forward") != b"forward" or "activations" in a:
        die("LSTM: expected one forward layer, hidden size 128, default activations")
    for name, shape in EXPECTED.items():
        if name not in init:
            die("missing tensor %s" % name)
        if tuple(init[name].shape) != shape:
            die("%s: shape %s, expected %s" % (name, init[name].shape, shape))
    w, r, b = (init[lstm.input[i]] for i in (1, 2, 3))
    if w.shape != (1, 4 * H, 128) or r.shape != (1, 4 * H, H) or b.shape != (1, 8 * H):
        die("LSTM: weight shapes %s %s %s" % (w.shape, r.shape, b.shape))
    return w[0], r[0], b[0]


def iofc_to_ifgo(x):
    i, o, f, c = np.split(x, 4, axis=0)
    return np.concatenate([i, f, c, o], axis=0)


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
        blobs.append(a.tobytes())
    header["__metadata__"] = {"format": "pt", "source": "faster-whisper 1.2.1 silero_vad_v6.onnx",
                              "converter": "tools/convert_silero_vad.py"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for blob in blobs:
            f.write(blob)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: convert_silero_vad.py silero_vad_v6.onnx OUT.safetensors")
    m = onnx.load(sys.argv[1])
    init = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    w, r, b = check_graph(m.graph, init)
    tensors = {name: init[name].astype(np.float32) for name in EXPECTED}
    tensors["decoder.rnn.weight_ih"] = iofc_to_ifgo(w)
    tensors["decoder.rnn.weight_hh"] = iofc_to_ifgo(r)
    tensors["decoder.rnn.bias_ih"] = iofc_to_ifgo(b[:4 * H])
    tensors["decoder.rnn.bias_hh"] = iofc_to_ifgo(b[4 * H:])
    write_safetensors(sys.argv[2], tensors)
    print("convert_silero_vad: %d tensors -> %s" % (len(tensors), sys.argv[2]))


if __name__ == "__main__":
    main()
