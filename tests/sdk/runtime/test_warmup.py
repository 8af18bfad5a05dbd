"""runtime.warmup: a standby process imports the installed packages its file uses, never the user's."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from protomcp_sdk.runtime.warmup import top_level_imports


def test_top_level_imports_are_the_absolute_module_level_ones() -> None:
    source = textwrap.dedent(
        """
        import json, email.mime as mime
        from pydantic import BaseModel
        from . import sibling
        def f():
            import decimal
        """
    )
    assert top_level_imports(source) == ["json", "email.mime", "pydantic"]


def test_warm_imports_installed_modules_and_never_the_projects_own(tmp_path: Path) -> None:
    (tmp_path / "helper_mod.py").write_text("import sys\nsys.stderr.write('helper imported\\n')\n")
    tool = tmp_path / "tool.py"
    tool.write_text("import helper_mod\nimport pydantic\nimport no_such_module_here\n")
    probe = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})  # as if the project were importable from here
        from protomcp_sdk.runtime import warmup
        warmup.warm({str(tool)!r})
        print("pydantic.main" in sys.modules, "helper_mod" in sys.modules)
        """
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]
    assert "helper imported" not in done.stderr


def test_a_file_that_does_not_parse_warms_nothing_and_does_not_fail(tmp_path: Path) -> None:
    from protomcp_sdk.runtime import warmup

    tool = tmp_path / "tool.py"
    tool.write_text("import json\nx = (\n")
    warmup.warm(str(tool))  # loading the file will report the syntax error, not the standby
    warmup.warm(str(tmp_path / "missing.py"))
