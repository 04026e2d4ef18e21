"""What can be checked of the probe without a GPU or PyTorch (run by CI through ctest):
- every module imports, probe.py included (PyTorch is imported only inside its run());
- the plan has 40-100 runs and covers what issue 21 asks (dense/GQA/MoE/MLA, TP 1-8 with and
  without SP, shard groups 8-256, reshard on/off, every recompute mode, compile on/off,
  micro-batch sizes, sequences 2k-32k), each with a unique id and a command the probe parses;
- a stub run (the figures a run would record) written by case_writer is read back by
  `meshfit validate` (MESHFIT_BIN), which estimates it like any published case.
"""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import case_writer  # noqa: E402
import configurations  # noqa: E402
import probe  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))


class Plan(unittest.TestCase):
    def test_size_and_ids(self):
        plan = configurations.plan()
        self.assertTrue(40 <= len(plan) <= 100, len(plan))
        self.assertEqual(len({e["id"] for e in plan}), len(plan))

    def test_coverage(self):
        plan = configurations.plan()
        self.assertEqual({e["tp"] for e in plan}, {1, 2, 4, 8})
        self.assertTrue(any(e["sp"] for e in plan) and any(e["tp"] > 1 and not e["sp"] for e in plan))
        groups = {e["shard_group"] for e in plan}
        self.assertEqual(min(groups), 8)
        self.assertGreaterEqual(max(groups), 64)
        self.assertTrue(any(e["world"] == 256 and e["shard_group"] == 256 for e in plan))
        self.assertEqual({e["reshard"] for e in plan}, {True, False})
        self.assertEqual({e["recompute"] for e in plan}, {"none", "full", "sac"})
        self.assertEqual({e["compile"] for e in plan}, {True, False})
        self.assertEqual({e["mbs"] for e in plan}, {1, 2, 4})
        self.assertEqual(min(e["seq"] for e in plan), 2048)
        self.assertEqual(max(e["seq"] for e in plan), 32768)
        self.assertEqual({e["model"] for e in plan},
                         {"llama-3.1-8b", "llama-3.1-70b", "qwen3-8b", "qwen3-30b-a3b", "deepseek-v2-lite"})

    def test_commands_parse(self):
        for e in configurations.plan():
            cmd = configurations.command(e, "out.yaml")
            self.assertTrue(os.path.exists(os.path.join(ROOT, cmd[3])), cmd[3])
            a = probe.parse_args(cmd[2:])
            self.assertEqual(a.world, e["world"])
            self.assertEqual(a.tp, e["tp"])
            self.assertEqual(a.no_reshard, not e["reshard"])


class CaseWriter(unittest.TestCase):
    def stub(self, entry):
        import json
        with open(os.path.join(ROOT, configurations.CONFIG_DIR, entry["model"] + ".json"), encoding="utf-8") as f:
            config = json.load(f)
        conf = probe.configuration(probe.parse_args(configurations.command(entry, "x.yaml")[2:]), config)
        steps = [{"seconds": 1.5, "allocated_gib": 30.0, "reserved_gib": 33.0},
                 {"seconds": 1.2, "allocated_gib": 41.25, "reserved_gib": 44.0},
                 {"seconds": 1.1, "allocated_gib": 41.25, "reserved_gib": 44.5}]
        a = probe.parse_args(configurations.command(entry, "x.yaml")[2:])
        return probe.record(a, conf, config, steps, 139.8)

    def test_record(self):
        r = self.stub(configurations.plan()[0])
        self.assertEqual(r["allocated_gib"], 41.25)  # the peak over the steps
        self.assertIsNone(r["step_time_s"])         # compute only, GPU shared: no throughput
        self.assertIn("Median step 1.2000 s", r["notes"])  # the median after the first step (1.1, 1.2)
        text = case_writer.case_text(r)
        self.assertTrue(text.startswith("- id: \"probe-00-"))
        for key in ("framework: \"pytorch-probe\"", "name: \"H200-141GB\"", "metric: \"allocated\"",
                    "value_gib: 41.25", "zero_stage: 3"):
            self.assertIn(key, text)

    def test_other_names_the_compiled_loss(self):
        # validate reads a compiled loss from `other` (a clause with "compil" and "loss").
        compiled = case_writer.other_text({"compile": True, "tp": 1})
        self.assertIn("compile", compiled)
        self.assertIn("loss", compiled)
        self.assertNotIn("loss", case_writer.other_text({"compile": False, "tp": 1}))
        self.assertIn("loss parallel", case_writer.other_text({"compile": False, "tp": 4}))

    def test_meshfit_reads_every_kind(self):
        binary = os.environ.get("MESHFIT_BIN")
        if not binary:
            self.skipTest("MESHFIT_BIN not set (ctest sets it)")
        plan = configurations.plan()
        picks = {}
        for e in plan:  # one of each model, with and without TP, each recompute mode
            picks.setdefault((e["model"], e["tp"] > 1, e["recompute"]), e)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "cases.yaml")
            for e in picks.values():
                case_writer.append_case(path, self.stub(e))
            r = subprocess.run([binary, "validate", path], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(f"{len(picks)} cases; median absolute error", r.stdout)


if __name__ == "__main__":
    unittest.main()
