#!/usr/bin/python3
"""Graph models (-net_graph) <-> PyTorch and ONNX through share/python/petnet_torch.py, suite tests/torch.suite:

1. PetNet -> PyTorch: the graph torch_graph_write saved (fan-out, add, concat with the Net's input, a residual node,
   batchnorm, upsample, pools, flatten, two dense heads joined by concat) loads as a petnet_torch.Graph whose outputs
   equal PetNet's to 1e-12, in evaluation and in training mode (petnet_torch.check); torch.fx traces its forward into
   call_module, add and cat nodes; its spec is the file's.
2. PyTorch -> PetNet: that Graph saved again by PyTorch (torch_graph_back.h5, the same spec and tensors bit for bit,
   with PyTorch's float64 output) and a user's nn.Module with x + y, torch.cat(dim=1), petnet_torch.Residual,
   AdaptiveAvgPool2d(1) + flatten, run in float32 (torch_graph_from_module.h5 with PyTorch's float32 output):
   torch_graph_import_* load them in PetNet and compare (1e-12; 1e-6 for the float32 model).
3. ONNX -> PetNet: a residual CNN written in PyTorch (skip connections, concat, batchnorm, avgpool with padding, a
   nearest upsample, global average pooling, Linear) exported by torch.onnx.export, and an ONNX graph written with
   onnx.helper (MatMul + Add, BatchNormalization, Sum, Reshape), imported by petnet_torch.import_onnx into PetNet graph files with the
   ONNX graph's own output (evaluated node by node: onnx 1.12 has no onnx.reference) for torch_graph_import_*.
4. What PetNet cannot represent is refused with a ValueError naming the node and the operator.
The runner may append PETSc options: they are ignored."""
import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "share", "python"))
import petnet_torch as pt  # noqa: E402

nn = torch.nn
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out") + "/"
ok = True

# 1. PetNet -> PyTorch
ok = pt.check(f"{out}torch_graph.h5", f"{out}torch_graph_data.h5", 1e-12) and ok
model, shape = pt.load(f"{out}torch_graph.h5")
assert isinstance(model, pt.Graph), f"{out}torch_graph.h5 loaded as {type(model).__name__}, not a Graph"
ops = [n.op for n in torch.fx.symbolic_trace(model).graph.nodes]
names = [getattr(n.target, "__name__", str(n.target)) for n in torch.fx.symbolic_trace(model).graph.nodes]
assert "add" in names and "cat" in names and ops.count("call_module") >= 10, f"torch.fx trace of the graph: {list(zip(ops, names))}"
print(f"torch.fx traces the graph into {ops.count('call_module')} modules, {names.count('add')} additions and {names.count('cat')} concatenations")

# 2. PyTorch -> PetNet: the same graph back, and a user's module
pt.export_model(model, shape, f"{out}torch_graph_back.h5", f"{out}torch_graph_back_data.h5", seed=2, samples=6)
again, shape2 = pt.load(f"{out}torch_graph_back.h5")
a, b = pt.state_arrays(model, shape), pt.state_arrays(again, shape2)
same = pt.spec_of(again) == pt.spec_of(model) and a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
print(f"{out}torch_graph_back.h5: PetNet -> PyTorch -> PetNet file: spec and {len(a)} tensors {'the same bit for bit' if same else 'DIFFER'}")
ok = ok and same


class Block(nn.Module):  # a user's module with skip connections: torch.fx traces x + y and torch.cat
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
        self.res = pt.Residual([nn.Conv2d(7, 7, 1), nn.Tanh()])
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(7, 5)
        self.fc2 = nn.Linear(5, 3)

    def forward(self, x):
        h = torch.relu(self.conv1(x))
        y = self.conv2(h) + h
        z = self.res(torch.cat([y, x], dim=1))
        f = self.fc(torch.flatten(self.pool(z), 1))
        return self.fc2(torch.sigmoid(f) + f)


block, bshape = pt._randomize(Block().double(), 7).float(), (6, 5, 3)
x = torch.rand((5,) + bshape, generator=torch.Generator().manual_seed(8), dtype=torch.float64) * 2 - 1
pt.save(block, bshape, f"{out}torch_graph_from_module.h5")
with torch.no_grad():
    y32 = block(pt.to_torch_batch(x, bshape).float())
import h5py  # noqa: E402

with h5py.File(f"{out}torch_graph_from_module_data.h5", "w") as f:
    f.create_dataset("input", data=x.reshape(5, -1).numpy())
    f.create_dataset("output", data=y32.double().numpy())
spec = pt.spec_of(block)
assert spec.count(" = add <- ") == 2 and " = concat <- " in spec and "residual:(" in spec and "globalavgpool" in spec, spec
print(f"{out}torch_graph_from_module.h5: a float32 nn.Module with + and torch.cat -> '{spec}'")


# 3. ONNX -> PetNet
class ResNetish(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(2, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.conv = nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.avg = nn.AvgPool2d(3, stride=1, padding=1)
        self.up = nn.Upsample(scale_factor=2)
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Conv2d(6, 5, 1)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(5, 3)

    def forward(self, x):
        h = torch.relu(self.bn(self.stem(x)))
        r = h + self.avg(torch.tanh(self.conv(h)))
        u = self.pool(self.up(r))
        c = torch.cat([u, x], dim=1)
        return self.fc(torch.flatten(self.gap(nn.functional.gelu(self.head(c))), 1))


res = pt._randomize(ResNetish().double(), 9).eval()
torch.onnx.export(res, torch.zeros(1, 2, 6, 6, dtype=torch.float64), f"{out}torch_graph_resnet.onnx", input_names=["x"], output_names=["y"],
                  opset_version=13, dynamic_axes={"x": {0: "n"}, "y": {0: "n"}})
onnx.checker.check_model(onnx.load(f"{out}torch_graph_resnet.onnx"), full_check=True)
imported, ishape, err = pt.import_onnx(f"{out}torch_graph_resnet.onnx", f"{out}torch_graph_from_onnx.h5", f"{out}torch_graph_from_onnx_data.h5", samples=6)
xs = torch.rand((4, 6, 6, 2), generator=torch.Generator().manual_seed(3), dtype=torch.float64) * 2 - 1
with torch.no_grad():
    err_torch = pt.relative_error(pt.forward(imported, xs.reshape(4, -1), ishape), pt.from_torch_batch(res(pt.to_torch_batch(xs, ishape)), pt._State((3,))))
good = ishape == (6, 6, 2) and err <= 1e-12 and err_torch <= 1e-12
print(f"{out}torch_graph_from_onnx.h5: a residual CNN via ONNX -> '{pt.spec_of(imported)}'; the imported model vs the ONNX graph "
      f"{err:.1e}, vs the PyTorch model {err_torch:.1e} ({'<=' if good else '>'} 1e-12)")
ok = ok and good

# an ONNX graph as other exporters write it: MatMul + Add (a dense layer), Sum of two branches, Reshape to (n, -1)
rng = np.random.default_rng(4)
init = [numpy_helper.from_array(rng.uniform(-1, 1, s).astype(np.float32), n) for n, s in (("W1", (6, 4)), ("b1", (4,)), ("W2", (6, 4)), ("W3", (4, 2)), ("b3", (2,)),
                                                                                      ("gamma", (4,)), ("beta", (4,)), ("mean", (4,)))]
init.append(numpy_helper.from_array(rng.uniform(0.5, 1.5, 4).astype(np.float32), "var"))
init.append(numpy_helper.from_array(np.array([0, -1], dtype=np.int64), "flat"))
nodes = [helper.make_node("Reshape", ["x", "flat"], ["xf"], name="flatten"),
         helper.make_node("MatMul", ["xf", "W1"], ["m1"], name="fc1"), helper.make_node("Add", ["m1", "b1"], ["a1"], name="fc1_bias"),
         helper.make_node("BatchNormalization", ["a1", "gamma", "beta", "mean", "var"], ["n1"], name="norm", epsilon=1e-3),
         helper.make_node("Relu", ["n1"], ["r1"], name="act"), helper.make_node("MatMul", ["xf", "W2"], ["m2"], name="fc2"),
         helper.make_node("Sum", ["r1", "m2"], ["s"], name="join"), helper.make_node("Gemm", ["s", "W3", "b3"], ["y"], name="head")]
graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 6])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 2])], init)
proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(proto, full_check=True)
onnx.save(proto, f"{out}torch_graph_matmul.onnx")
mm, mshape, err = pt.import_onnx(f"{out}torch_graph_matmul.onnx", f"{out}torch_graph_from_matmul.h5", f"{out}torch_graph_from_matmul_data.h5")
mspec = pt.spec_of(mm)
xm = rng.uniform(-1, 1, (3, 6)).astype(np.float32)
Wt = {t.name: numpy_helper.to_array(t) for t in init}
eps = float(np.float32(1e-3))
norm = (xm @ Wt["W1"] + Wt["b1"] - Wt["mean"]) / np.sqrt(Wt["var"] + eps) * Wt["gamma"] + Wt["beta"]
ref = (np.maximum(norm, 0) + xm @ Wt["W2"]) @ Wt["W3"] + Wt["b3"]
err_np = pt.relative_error(pt.forward(mm, xm.astype(np.float64), mshape), ref)
good = mspec == f"fc1 = dense:4 <- input; norm = batchnorm:0.1:{pt._real_text(eps)} <- fc1; act = relu <- norm; fc2 = dense:4:bias=0 <- input; join = add <- act, fc2; head = dense:2 <- join;" and err <= 1e-6 and err_np <= 1e-6
print(f"{out}torch_graph_from_matmul.h5: MatMul + Add, BatchNormalization, Sum, Reshape -> '{mspec}'; vs the ONNX graph {err:.1e}, vs numpy float32 {err_np:.1e} ({'<=' if good else '>'} 1e-6)")
ok = ok and good


# 4. refused, naming the node and the operator
def refused(call, words):
    global ok
    try:
        call()
    except ValueError as e:
        if all(w in str(e) for w in words):
            print(f"refused: {str(e)[:150]}")
            return
        print(f"FAIL: the message '{e}' lacks {words}")
    else:
        print(f"FAIL: accepted, expected an error with {words}")
    ok = False


def onnx_with(node, inputs=("x",), shape=("n", 6)):
    g = helper.make_graph([node], "one", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))], [helper.make_tensor_value_info(node.output[0], TensorProto.FLOAT, None)], [])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


refused(lambda: pt.from_onnx(onnx_with(helper.make_node("Softmax", ["x"], ["y"], name="probs"))), ["'probs'", "(Softmax)", "has no PetNet layer", "PetNet imports"])
refused(lambda: pt.from_onnx(onnx_with(helper.make_node("Concat", ["x", "x"], ["y"], name="widen", axis=2), shape=("n", 2, 3, 3))), ["'widen'", "(Concat)", "axis 2"])
refused(lambda: pt.from_onnx(onnx_with(helper.make_node("MatMul", ["x", "x"], ["y"], name="gram"))), ["'gram'", "(MatMul)"])
refused(lambda: pt.build_graph("a = dense:4 <- input; g = gcn:3 <- a", (5,)), ["graph node 'g'", "gcn"])
refused(lambda: pt.build_graph("a = dense:4 <- input; b = dense:3 <- input; s = add <- a, b", (5,)), ["graph node 's'", "add needs inputs of one shape"])
refused(lambda: pt.build_graph("a = dense:4 <- input; s = concat <- a", (5,)), ["graph node 's'", "at least 2 inputs"])


class Sine(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x) + torch.sin(x)


class WidthCat(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 2, 1)

    def forward(self, x):
        return torch.cat([self.conv(x), x], dim=-1)


refused(lambda: pt.spec_of(Sine()), ["Sine.forward", "'sin'"])
refused(lambda: pt.save(WidthCat(), (3, 3, 2), f"{out}torch_graph_refused.h5"), ["torch.cat(dim=-1)", "use dim=1"])
sys.exit(0 if ok else 1)
