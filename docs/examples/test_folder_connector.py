import sys
from pathlib import Path

from passageway.testing import Connector, check_connector


def test_folder_connector(tmp_path):
    (tmp_path / "a.txt").write_text("Lighthouses guide ships.")
    script = str(Path(__file__).with_name("folder_connector.py"))
    connector = Connector("notes", [sys.executable, script], env={"FOLDER": str(tmp_path)})
    check_connector(connector)
