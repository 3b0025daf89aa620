"""test_random_arch.py: runners/random_arch.py: names rebuild the same module, the MAC cap (counted
here by forward hooks, not by the generator's own formula), the exported graphs and CSVs, and
network_runner measuring the models by name."""

import contextlib
import io
import os
import tempfile
import unittest

import _common  # noqa: F401
import models
import network_runner
import onnx
import random_arch
import torch

SEED = 7
NAMES = random_arch.names_for(SEED, 30, 10)
SMALL_SEED = 103  # its randcnn/randtf index 0 are tiny (17 and 28 MMAC): quick to export


def shapes(m):
    return [(n, tuple(p.shape)) for n, p in m.named_parameters()]


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def count_macs(model, x):
    """MACs of one forward, counted from what runs: Conv2d and Linear by forward hooks, matrix
    products by wrapping torch.matmul (the attention's q k^T and att v)."""
    total = [0]
    hooks = []

    def conv(m, inp, out):
        total[0] += out.numel() * (m.in_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1]

    def lin(m, inp, out):
        total[0] += out.numel() * m.in_features
    for m in model.modules():
        if isinstance(m, torch.nn.Conv2d):
            hooks.append(m.register_forward_hook(conv))
        elif isinstance(m, torch.nn.Linear):
            hooks.append(m.register_forward_hook(lin))
    orig = torch.matmul

    def matmul(a, b):
        out = orig(a, b)
        total[0] += out.numel() * a.shape[-1]
        return out
    torch.matmul = matmul
    try:
        with torch.inference_mode():
            model(x)
    finally:
        torch.matmul = orig
        for h in hooks:
            h.remove()
    return total[0]


class RandomArchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.set_num_threads(1)

    def test_same_name_should_rebuild_the_same_module(self):
        for name in ("randcnn_s7_i9", "randtf_s7_i7", "randtf_s103_i0"):
            a, b = random_arch.build(name), random_arch.build(name)
            self.assertEqual(shapes(a), shapes(b))
            self.assertEqual(sum(p.numel() for p in a.parameters()),
                             sum(p.numel() for p in b.parameters()))
            self.assertEqual(random_arch.config_for(name), random_arch.config_for(name))

    def test_names_should_mean_the_same_architecture_on_every_machine(self):
        # pinned when the generator was written: a change to the sampling renames every model
        # already measured, so it needs new kind names, not new meanings for the old ones
        for name, params, macs, shape in (("randcnn_s7_i9", 368312, 10862304, (1, 3, 96, 96)),
                                          ("randtf_s7_i7", 459370, 39612384, (1, 3, 72, 72)),
                                          ("randtf_s103_i0", 213898, 28183680, (1, 109, 96))):
            m = random_arch.build(name)
            self.assertEqual(sum(p.numel() for p in m.parameters()), params, name)
            self.assertEqual(count_macs(m, torch.randn(shape)), macs, name)

    def test_different_indices_and_seeds_should_differ(self):
        for kind, n in (("randcnn", 12), ("randtf", 8)):
            archs = [shapes(random_arch.build(f"{kind}_s{SEED}_i{i}")) for i in range(n)]
            self.assertEqual(len({repr(a) for a in archs}), n, kind)
            other = shapes(random_arch.build(f"{kind}_s{SEED + 1}_i0"))
            self.assertNotEqual(repr(other), repr(archs[0]))

    def test_every_model_of_a_seed_should_respect_the_mac_cap(self):
        counted = []
        for name in NAMES:
            cfg = random_arch.config_for(name)
            m = random_arch.build(name)
            x = torch.randn(random_arch.input_shape(cfg))
            macs = count_macs(m, x)
            self.assertLessEqual(macs, random_arch.MAC_CAP, name)
            self.assertEqual(macs, cfg["macs"], name)  # the generator's formula agrees
            counted.append(macs)
        # small and large ones both
        self.assertLess(min(counted), 50e6)
        self.assertGreater(max(counted), 1e9)

    def test_architectures_should_stay_in_their_ranges(self):
        acts = {torch.nn.ReLU, torch.nn.ReLU6, torch.nn.SiLU, torch.nn.Hardswish, torch.nn.GELU}
        seen = set()
        for name in NAMES:
            cfg = random_arch.config_for(name)
            m = random_arch.build(name)
            shape = random_arch.input_shape(cfg)
            if name.startswith("randcnn"):
                self.assertTrue(96 <= shape[-1] <= 224, name)
                widths = {c.out_channels for c in m.modules() if isinstance(c, torch.nn.Conv2d)
                          and c.groups == 1 and c.kernel_size != (1, 1)}
                self.assertTrue(all(w % 8 == 0 and w >= 16 for w in widths), (name, widths))
                self.assertLessEqual(m.head.in_features, 512)
                self.assertIn(len({b["stage"] for b in cfg["blocks"]}), (3, 4, 5))
                seen |= {type(q) for q in m.modules()} & acts
            else:
                d, heads = m.head.in_features, m.blocks[0].attn.h
                tokens = m.pos.shape[1] - (1 if m.cls is not None else 0)
                self.assertTrue(49 <= tokens <= 256, name)
                self.assertTrue(64 <= d <= 512 and d % (heads * 16) == 0, name)
                self.assertTrue(2 <= heads <= 8 and 2 <= len(m.blocks) <= 6, name)
        self.assertEqual(seen, acts)  # every activation occurs in seed 7's CNNs

    def test_spec_for_name_should_build_models_that_run_at_batch_2(self):
        for name in ("randcnn_s7_i9", "randtf_s7_i3"):
            s = models.spec_for_name(name, "/nonexistent")
            self.assertEqual(s.family, name.split("_")[0])
            self.assertEqual(s.onnx_path, os.path.join("/nonexistent", name + ".onnx"))
            x = s.make_input(torch, 2)
            with torch.inference_mode():
                y = s.build()(x)
            self.assertEqual(tuple(y.shape), (2, random_arch.config_for(name)["classes"]))

    def test_malformed_names_should_be_refused_by_name(self):
        for bad in ("randcnn_sX_i1", "randtf_s7", "randcnn_s7_i-1", "randtf_s7_i3_x", "randcnn"):
            with self.assertRaises(ValueError) as cm:
                models.spec_for_name(bad, ".")
            self.assertIn(repr(bad), str(cm.exception))
        self.assertIsNone(models.spec_for_name("randomnet", "."))  # not ours: unknown, as before

    def test_folding_should_remove_every_batchnorm_and_keep_the_output(self):
        m = random_arch.build("randcnn_s7_i9")
        x = torch.randn(2, 3, 96, 96)
        with torch.inference_mode():
            want = m(x)
        f, how, n0, n1 = models.fold_batchnorm(torch, m)
        self.assertGreater(n0, 0)
        self.assertEqual(n1, 0)
        with torch.inference_mode():
            self.assertTrue(torch.allclose(f(x), want, rtol=1e-4, atol=1e-4))

    def test_cli_should_write_graphs_and_csvs_that_network_runner_measures(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "rand")
            args = ["--seed", str(SMALL_SEED), "--n-cnn", "1", "--n-tf", "1", "--out-dir", out,
                    "--batches", "1,2,4,8", "--configs-per-model", "2"]
            with contextlib.redirect_stderr(io.StringIO()):
                self.assertEqual(random_arch.main(args), 0)
            names = [f"randcnn_s{SMALL_SEED}_i0", f"randtf_s{SMALL_SEED}_i0"]
            self.assertEqual(sorted(os.listdir(out)),
                             sorted([n + ".onnx" for n in names] + ["configs.csv",
                                                                     "reference.csv"]))
            hdr, rows = _common.read_csv(os.path.join(out, "reference.csv"))
            for col in ("file", "model", "family", "input_name", "input_shape", "input_dtype"):
                self.assertIn(col, hdr)
            self.assertEqual([r["model"] for r in rows], names)
            self.assertEqual([r["family"] for r in rows], ["randcnn", "randtf"])
            self.assertEqual([r["input_shape"] for r in rows], ["1x3x128x128", "1x109x96"])
            for r in rows:
                self.assertEqual((r["file"], r["input_name"], r["input_dtype"]),
                                 (r["model"] + ".onnx", "input", "float32"))
                g = onnx.load(os.path.join(out, r["file"]))
                self.assertEqual(g.opset_import[0].version, 17)
                self.assertEqual(len(g.graph.initializer), 0)  # export_params=False
                self.assertEqual(g.graph.input[0].name, "input")
                self.assertEqual(g.graph.input[0].type.tensor_type.shape.dim[0].dim_param,
                                 "batch")
                ops = {n.op_type for n in g.graph.node}
                self.assertNotIn("BatchNormalization", ops)
            self.assertTrue({"MatMul", "Softmax", "LayerNormalization"} <= {
                n.op_type for n in onnx.load(os.path.join(out, names[1] + ".onnx")).graph.node})
            hdr, cfg_rows = _common.read_csv(os.path.join(out, "configs.csv"))
            self.assertEqual(hdr, ["model", "batch"])
            for n in names:
                b = [int(r["batch"]) for r in cfg_rows if r["model"] == n]
                self.assertEqual(len(set(b)), 2)
                self.assertTrue(set(b) <= {1, 2, 4, 8})
            first = read_text(os.path.join(out, "configs.csv"))
            with contextlib.redirect_stderr(io.StringIO()):
                random_arch.main(args)
            # deterministic, and rewritten in place without leftovers
            self.assertEqual(read_text(os.path.join(out, "configs.csv")), first)
            self.assertEqual(len(os.listdir(out)), 4)

            res = os.path.join(tmp, "res", "net.csv")
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                rc = network_runner.main(["--reference", os.path.join(out, "reference.csv"),
                                          "--configs", os.path.join(out, "configs.csv"),
                                          "-o", res, "--device-name", "test-cpu",
                                          "--threads", "1", "--rounds", "1", "--burst", "1",
                                          "--warmup-calls", "1", "--warmup-ms", "0", "--quiet"])
            self.assertEqual(rc, 0, err.getvalue())
            _, net = _common.read_csv(res)
            self.assertEqual(sorted((r["model"], r["batch"]) for r in net),
                             sorted((os.path.join("..", "rand", r["model"] + ".onnx"), r["batch"])
                                    for r in cfg_rows))
            for r in net:
                self.assertGreater(float(r["latency_ms"]), 0)
            cnn = [r for r in net if r["family"] == "randcnn"]
            self.assertTrue(cnn and all("bn=fx" in r["source"] and " 0 of" not in r["source"]
                                        for r in cnn))
            self.assertEqual(sorted(os.listdir(out)), sorted(
                [n + ".onnx" for n in names] + ["configs.csv", "reference.csv"]))

    def test_cli_should_refuse_bad_arguments(self):
        with tempfile.TemporaryDirectory() as tmp:
            for extra in (["--configs-per-model", "5"], ["--batches", "1,x"],
                          ["--batches", "2,2"], ["--n-cnn", "0", "--n-tf", "0"]):
                with contextlib.redirect_stderr(io.StringIO()):
                    rc = random_arch.main(["--seed", "1", "--out-dir", tmp] + extra)
                self.assertEqual(rc, 2, extra)
            self.assertEqual(os.listdir(tmp), [])


if __name__ == "__main__":
    unittest.main()
