"""The office environment built for real from Debian's archive (AGENTMILL_IMAGES=debian): the
grounded task's own Dockerfile, its office layer shared through the agentmill layer cache (built
once, about 70 s and 340 MB; then each task adds only its workspace), the teacher's openpyxl and
python-docx script passes in it and the tools the docs promise are there. Needs Debian's archive,
as tests/images/test_debian.py does."""

import asyncio
from pathlib import Path

import pytest

from agentmill.grounded.corpus import build_corpus
from agentmill.images import ImageBuilder
from agentmill.images.userns import BuilderUnavailable, build_identity
from agentmill.tasks import load_task
from tests.conftest import sandbox, scratch_cache
from tests.grounded import office
from tests.grounded.test_office_task import run

try:
    build_identity()
    _why = None
except BuilderUnavailable as e:
    _why = str(e)

pytestmark = [sandbox, pytest.mark.skipif(_why is not None, reason=f"Debian image builder unavailable: {_why}")]


def test_office_task_in_a_debian_built_image(tmp_path, monkeypatch):
    for var in ("AGENTMILL_JUDGE_MODEL", "AGENTMILL_JUDGE_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    task = office.office_task(tmp_path, build_corpus(tmp_path / "corpus", bulk=False))
    builder = ImageBuilder(cache=scratch_cache(tmp_path), mode="debian", retry_delays=(3.0,))
    image = asyncio.run(asyncio.wait_for(builder.get(load_task(task)), 1200))
    assert image.builder == "debian"
    system = Path(image.system)
    for tool in ("usr/bin/pdftotext", "usr/bin/xmllint", "usr/bin/jq"):
        assert (system / tool).exists(), tool
    for module in ("openpyxl", "docx", "pandas", "pypdf", "reportlab", "xlsxwriter", "lxml", "markdown"):
        assert (system / "usr/lib/python3/dist-packages" / module).is_dir(), module
    good, _ = run(task, builder, office.RIGHT, tmp_path / "runs" / "right-a0")
    assert good.result.reward == 1.0, good.result.verifier_stdout
    assert any("Debian layers" in n for n in good.result.notes), good.result.notes
