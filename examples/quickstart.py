"""agentmill in a script: load the bundled tasks, run the oracle agent on two of them (no model
needed), summarise, and export SFT rows and a Harbor job folder. Usage: python quickstart.py [OUT_DIR]"""

import asyncio
import sys
import tempfile
from pathlib import Path

import agentmill as am

out = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="agentmill-"))
dataset = am.load_dataset(am.sample_dataset_path(), names=["csv-revenue-by-region", "dedupe-photos"])
config = am.RolloutConfig(
    dataset=str(dataset.root),
    agent="oracle",
    agent_version=am.agent_class("oracle").version,
    attempts=2,
)
report = asyncio.run(am.run_rollout(config, dataset.tasks, out / "run"))
summary = am.summarize(out / "run")
print(f"{report.ran} trials ran; outcomes {summary['outcomes']}; mean reward {summary['mean_reward']}")

keep_all = am.FilterSpec(min_turns=0)  # oracle trajectories are one turn long: keep them
sft = am.export_run(out / "run", "trl", out / "sft.jsonl", spec=keep_all)
job = am.export_run(out / "run", "harbor-job", out / "harbor-job", spec=keep_all)
print(f"{sft.rows} SFT rows -> {sft.path}; {job.rows} trials -> Harbor job {job.path}")
