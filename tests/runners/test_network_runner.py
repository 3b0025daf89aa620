"""test_network_runner.py: runners/network_runner.py on a tiny network (in process): the network CSV,
its graph paths, the ONNX export without weights, and a resumed run."""

import contextlib
import csv
import io
import os
import tempfile
import unittest

import _common  # noqa: F401
import models
import network_runner
import onnx
import timing
import torch


def tiny_spec(path):
    def build():
        return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4),
                                   torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                                   torch.nn.Flatten(), torch.nn.Linear(4, 2))
    return models.ModelSpec(name="tiny", family="tinynet", input_name="input",
                            shape=(1, 3, 12, 12), dtype="float32", onnx_path=path,
                            source="test", builder=build)


class NetworkRunnerTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.graph = os.path.join(self.tmp.name, "graphs", "tiny.onnx")
        self.out = os.path.join(self.tmp.name, "res", "net.csv")
        self.spec = tiny_spec(self.graph)
        self.proto = timing.Protocol(rounds=2, burst=2, warmup_calls=1, warmup_min_s=0.0,
                                     min_sample_us=0.0)
        torch.set_num_threads(1)

    def tearDown(self):
        self.tmp.cleanup()

    def measure(self, **kw):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            return network_runner.measure_networks(
                [self.spec], [1, 3], self.out, torch=torch, device_name="test-cpu",
                protocol=self.proto, quiet=True, **kw)

    def test_export_should_leave_weights_out_and_keep_batch_symbolic(self):
        models.export_onnx(torch, self.spec, self.graph)
        m = onnx.load(self.graph)
        self.assertEqual(len(m.graph.initializer), 0)
        names = [i.name for i in m.graph.input]
        self.assertEqual(names[0], "input")
        self.assertGreater(len(names), 1)  # the weights became graph inputs
        d0 = m.graph.input[0].type.tensor_type.shape.dim[0]
        self.assertEqual(d0.dim_param, "batch")
        self.assertEqual(os.listdir(os.path.dirname(self.graph)), ["tiny.onnx"])

    def test_measure_should_write_one_row_per_batch(self):
        res, n = self.measure()
        self.assertEqual(n, 2)
        with open(self.out, newline="", encoding="utf-8") as f:
            rd = csv.DictReader(f)
            self.assertEqual(rd.fieldnames, network_runner.NET_COLUMNS)
            rows = list(rd)
        self.assertEqual([r["batch"] for r in rows], ["1", "3"])
        for r in rows:
            # relative to the CSV's folder, as docs/measurements.md says
            self.assertEqual(r["model"], os.path.join("..", "graphs", "tiny.onnx"))
            self.assertEqual(r["family"], "tinynet")
            self.assertEqual(r["runtime"], "pytorch-eager")
            self.assertEqual(r["precision"], "fp32")
            self.assertGreater(float(r["latency_ms"]), 0)
            self.assertEqual(r["energy_j"], "")
            self.assertEqual(r["peak_memory_bytes"], "")
            self.assertIn("memory=not measured on CPU", r["source"])
            self.assertEqual(int(r["repetitions"]), 4)
        self.assertEqual(rows[0]["input_shapes"], "input:1x3x12x12")
        self.assertEqual(rows[1]["input_shapes"], "input:3x3x12x12")

    def test_kept_heap_should_be_recorded_and_part_of_the_identity(self):
        # the source says it where kept, and a run of the other state does not resume this one
        self.measure(malloc="kept")
        with open(self.out, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        self.assertTrue(all("; malloc=kept" in r["source"] for r in rows))
        with self.assertRaises(timing.ResumeMismatch):
            self.measure()
        os.remove(self.out + ".partial.jsonl")
        self.measure()
        with open(self.out, newline="", encoding="utf-8") as f:
            self.assertFalse(any("malloc=" in r["source"] for r in csv.DictReader(f)))

    def test_visit_warmup_should_add_untimed_calls_and_be_recorded(self):
        calls = {}
        for vw in (1, 3):
            spec = tiny_spec(self.graph)
            build = spec.builder

            def counted(build=build, vw=vw):
                m = build()
                # on the last layer: BatchNorm folding rebuilds the container, not its layers
                m[-1].register_forward_pre_hook(
                    lambda *_: calls.__setitem__(vw, calls.get(vw, 0) + 1))
                return m
            spec.builder = counted
            proto = timing.Protocol(rounds=2, burst=2, warmup_calls=1, warmup_min_s=0.0,
                                    min_sample_us=0.0, visit_warmup=vw)
            out = os.path.join(self.tmp.name, f"vw{vw}.csv")
            with contextlib.redirect_stderr(io.StringIO()):
                network_runner.measure_networks([spec], [1], out, torch=torch,
                                                device_name="test-cpu", protocol=proto, quiet=True)
            with open(out, newline="", encoding="utf-8") as f:
                row = next(csv.DictReader(f))
            self.assertIn(f"visit_warmup={vw}", row["source"])
        # two more untimed calls in each of the 2 rounds' visits; everything else alike
        self.assertEqual(calls[3] - calls[1], 2 * 2)

    def test_batchnorm_should_be_folded_and_said_so(self):
        self.measure()
        with open(self.out, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        self.assertTrue(all("bn=fx (1 of 1 folded)" in r["source"] for r in rows))
        os.remove(self.out)
        os.remove(self.out + ".partial.jsonl")
        self.measure(fold_bn=False)
        with open(self.out, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        self.assertTrue(all("bn=not-folded" in r["source"] for r in rows))

    def test_fold_should_keep_the_output_and_fall_back_to_sequential_pairs(self):
        class Untraceable(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.body = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                                                torch.nn.ReLU(), torch.nn.BatchNorm2d(4))

            def forward(self, x):
                if x.sum() > -1e30:  # data-dependent control flow: torch.fx cannot trace it
                    return self.body(x)
                return x
        torch.manual_seed(3)
        m = Untraceable().eval()
        for bn in (m.body[1], m.body[3]):  # running statistics away from identity
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
        x = torch.randn(2, 3, 9, 9)
        with torch.inference_mode():
            want = m(x)
        f, how, n0, n1 = models.fold_batchnorm(torch, m)
        self.assertEqual((how, n0, n1), ("sequential", 2, 1))  # the BN after ReLU stays
        self.assertIsInstance(f.body[1], torch.nn.Identity)
        with torch.inference_mode():
            self.assertTrue(torch.allclose(f(x), want, atol=1e-5))

    def test_fold_should_clear_a_real_untraceable_model(self):
        # torchvision's shufflenet does not trace with torch.fx (it iterates a Proxy); its 56
        # BatchNorms all follow a convolution inside an nn.Sequential
        spec = models.spec_for_name("shufflenet_v2_x0_5", self.tmp.name, "torchvision")
        torch.manual_seed(0)
        m = spec.build().eval()
        for bn in m.modules():  # statistics away from identity, so folding changes the weights
            if isinstance(bn, torch.nn.BatchNorm2d):
                bn.running_mean.uniform_(-0.5, 0.5)
                bn.running_var.uniform_(0.5, 2.0)
                bn.weight.data.uniform_(0.5, 1.5)
                bn.bias.data.uniform_(-0.5, 0.5)
        x = spec.make_input(torch, 2, resolution=64)
        with torch.inference_mode():
            want = m(x)
        f, how, n0, n1 = models.fold_batchnorm(torch, m)
        self.assertEqual((how, n0, n1), ("sequential", 56, 0))
        with torch.inference_mode():
            self.assertTrue(torch.allclose(f(x), want, rtol=1e-4, atol=1e-4))

    def test_resolution_should_change_the_input_and_the_key(self):
        res, n = self.measure(resolutions=[12, 16])
        self.assertEqual(n, 4)
        with open(self.out, newline="", encoding="utf-8") as f:
            shapes = sorted(r["input_shapes"] for r in csv.DictReader(f))
        self.assertEqual(shapes, ["input:1x3x12x12", "input:1x3x16x16", "input:3x3x12x12",
                                  "input:3x3x16x16"])
        self.assertNotEqual(network_runner.config_key(self.spec, 1, 16),
                            network_runner.config_key(self.spec, 1, 12))
        self.assertEqual(network_runner.config_key(self.spec, 1, 12),
                         network_runner.config_key(self.spec, 1))

    def test_configs_file_should_be_read_strictly(self):
        path = os.path.join(self.tmp.name, "configs.csv")

        def write(text):
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        write("model,batch,resolution\nresnet18,2,160\nresnet18,1,\n")
        got = network_runner.read_configs(path, self.tmp.name)
        self.assertEqual([(s.name, b, r) for s, b, r in got],
                         [("resnet18", 2, 160), ("resnet18", 1, None)])
        self.assertEqual(got[0][0].input_shape(2, 160), (2, 3, 160, 160))
        for text, where in (("model,batch\nresnet18,0\n", "line 2"),
                            ("model,batch\nresnet18,1\nnot_a_model,1\n", "line 3"),
                            ("model,resolution\nresnet18,160\n", "line 1"),
                            ("model,batch,resolution\nresnet18,1,16x\n", "line 2")):
            write(text)
            with self.assertRaises(ValueError) as cm:
                network_runner.read_configs(path, self.tmp.name)
            self.assertIn(f"{path}: {where}", str(cm.exception))

    def test_configs_should_take_random_models_from_the_reference(self):
        ref_dir = os.path.join(self.tmp.name, "rand")
        os.makedirs(ref_dir)
        ref = os.path.join(ref_dir, "reference.csv")
        with open(ref, "w", encoding="utf-8") as f:
            f.write("file,model,family,input_name,input_shape,input_dtype\n"
                    "randcnn_s7_i9.onnx,randcnn_s7_i9,randcnn,input,1x3x96x96,float32\n")
        path = os.path.join(self.tmp.name, "configs.csv")
        with open(path, "w", encoding="utf-8") as f:
            f.write("model,batch\nrandcnn_s7_i9,2\nrandtf_s7_i7,1\nresnet18,1\n")
        known = {s.name: s for s in models.specs_from_reference(ref)}
        got = network_runner.read_configs(path, self.tmp.name, known=known)
        self.assertEqual([(s.name, s.family, b) for s, b, _ in got],
                         [("randcnn_s7_i9", "randcnn", 2), ("randtf_s7_i7", "randtf", 1),
                          ("resnet18", "resnet", 1)])
        # from the reference: its graph beside it; by name alone: in graphs_dir
        self.assertEqual(got[0][0].onnx_path, os.path.join(ref_dir, "randcnn_s7_i9.onnx"))
        self.assertEqual(got[1][0].onnx_path, os.path.join(self.tmp.name, "randtf_s7_i7.onnx"))
        self.assertEqual(got[1][0].shape, (1, 3, 72, 72))
        x = got[0][0].make_input(torch, 2)
        with torch.inference_mode():
            self.assertEqual(tuple(got[0][0].build()(x).shape), (2, 1000))

    def test_random_names_that_do_not_parse_should_be_refused_with_their_place(self):
        path = os.path.join(self.tmp.name, "configs.csv")
        with open(path, "w", encoding="utf-8") as f:
            f.write("model,batch\nrandcnn_s7_i9,2\nrandcnn_sX_i1,1\n")
        with self.assertRaises(ValueError) as cm:
            network_runner.read_configs(path, self.tmp.name)
        self.assertIn(f"{path}: line 3", str(cm.exception))
        self.assertIn("'randcnn_sX_i1'", str(cm.exception))
        ref = os.path.join(self.tmp.name, "reference.csv")
        for row, what in (("randcnn_s7_i9.onnx,randcnn_s7_i9,randcnn,input,1x3x224x224,float32",
                           "1x3x96x96"),
                          ("randtf_sX_i1.onnx,randtf_sX_i1,randtf,input,1x3x64x64,float32",
                           "'randtf_sX_i1'")):
            with open(ref, "w", encoding="utf-8") as f:
                f.write("file,model,family,input_name,input_shape,input_dtype\n" + row + "\n")
            with self.assertRaises(ValueError) as cm:
                models.specs_from_reference(ref)
            self.assertIn(f"{ref}:2", str(cm.exception))
            self.assertIn(what, str(cm.exception))

    def test_rerun_should_resume(self):
        self.measure(stop_after_visits=1)
        res, n = self.measure()
        self.assertEqual(res.visits_this_run, 3)
        self.assertEqual(n, 2)
        res, n = self.measure()
        self.assertEqual(res.visits_this_run, 0)

    def test_reference_rows_should_become_specs(self):
        ref = os.path.join(self.tmp.name, "fixtures", "reference.csv")
        os.makedirs(os.path.dirname(ref))
        with open(ref, "w", encoding="utf-8") as f:
            f.write("file,model,family,input_name,input_shape,input_dtype,output_shape\n"
                    "resnet18.onnx,resnet18,resnet,input,1x3x224x224,float32,1x1000\n"
                    "bert_mini_op17.onnx,bert_mini,bert,input,1x128,int64,1x128x256\n"
                    "bert_mini_op17.onnx,bert_mini,bert,input,4x64,int64,4x64x256\n")
        specs = network_runner.resolve_specs("", ref, self.tmp.name)
        self.assertEqual([(s.name, s.family, s.shape, s.dtype) for s in specs],
                         [("resnet18", "resnet", (1, 3, 224, 224), "float32"),
                          ("bert_mini", "bert", (1, 128), "int64"),
                          ("bert_mini", "bert", (4, 64), "int64")])
        self.assertEqual(specs[1].onnx_path, os.path.join(os.path.dirname(ref),
                                                          "bert_mini_op17.onnx"))
        self.assertEqual(specs[2].input_shape(8), (8, 64))
        # the text model is rebuilt by tools/export_models.py's builder and takes token ids
        x = specs[2].make_input(torch, 2)
        self.assertEqual(x.dtype, torch.int64)
        with torch.inference_mode():
            y = specs[2].build().eval()(x)
        self.assertEqual(tuple(y.shape), (2, 64, 256))

    def test_unknown_model_name_should_be_refused(self):
        with self.assertRaises(ValueError):
            network_runner.resolve_specs("resnet18,not_a_model", None, self.tmp.name)
        specs = network_runner.resolve_specs("resnet18", None, self.tmp.name)
        self.assertEqual(specs[0].family, "resnet")
        self.assertEqual(specs[0].shape, (1, 3, 224, 224))
        self.assertEqual(specs[0].onnx_path, os.path.join(self.tmp.name, "resnet18.onnx"))
        self.assertEqual(models.spec_for_name("inception_v3", ".").shape, (1, 3, 299, 299))


if __name__ == "__main__":
    unittest.main()
