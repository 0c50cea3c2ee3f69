"""The bundled O*NET 30.0 tables (CC BY 4.0, see data/onet/ATTRIBUTION.md), read as rows."""

from __future__ import annotations

import csv
import gzip
import io
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).parent / "data" / "onet"

# SOC 2018 major groups: the sector of an occupation is its code's first two digits.
SECTORS = {
    "11": "Management",
    "13": "Business and Financial Operations",
    "15": "Computer and Mathematical",
    "17": "Architecture and Engineering",
    "19": "Life, Physical, and Social Science",
    "21": "Community and Social Service",
    "23": "Legal",
    "25": "Educational Instruction and Library",
    "27": "Arts, Design, Entertainment, Sports, and Media",
    "29": "Healthcare Practitioners and Technical",
    "31": "Healthcare Support",
    "33": "Protective Service",
    "35": "Food Preparation and Serving Related",
    "37": "Building and Grounds Cleaning and Maintenance",
    "39": "Personal Care and Service",
    "41": "Sales and Related",
    "43": "Office and Administrative Support",
    "45": "Farming, Fishing, and Forestry",
    "47": "Construction and Extraction",
    "49": "Installation, Maintenance, and Repair",
    "51": "Production",
    "53": "Transportation and Material Moving",
    "55": "Military Specific",
}


def sector(code: str) -> str:
    return SECTORS.get(code[:2], f"SOC {code[:2]}")


def rows(name: str, data_dir: Path = DATA) -> list[dict[str, str]]:
    path = data_dir / f"{name}.csv.gz"
    with gzip.open(path, "rb") as fh:
        return list(csv.DictReader(io.TextIOWrapper(fh, encoding="utf-8")))


@lru_cache(maxsize=4)
def exposure_by_task(data_dir: Path = DATA) -> dict[str, str]:
    """Task ID -> exposure label (E0/E1/E2): the human aggregate, else GPT-4's rating."""
    out = {}
    for r in rows("gpts_are_gpts_exposure_labels", data_dir):
        tid = r["Task ID"].split(".")[0]
        label = r.get("human_exposure_agg") or r.get("gpt4_exposure") or ""
        if tid and label:
            out[tid] = label
    return out
