"""``longdoc chunks DOC``: the table's section column, for numbered and continental (``§ N``) sections."""

from __future__ import annotations

import pytest

from longdoc import wiring
from longdoc.cli import main

pytestmark = pytest.mark.slow

VERTRAG = """Dienstleistungsvertrag

§ 1 Vertragsgegenstand

(1) Der Auftragnehmer erbringt für den Auftraggeber Beratungsleistungen im Bereich der Datenverarbeitung.

(2) Einzelheiten ergeben sich aus der Leistungsbeschreibung in Anlage 1.

§ 2 Vergütung

(1) Die Vergütung beträgt EUR 1.500,00 je Monat zuzüglich der gesetzlichen Umsatzsteuer.

(2) Rechnungen sind innerhalb von 30 Tagen nach Zugang ohne Abzug zu zahlen.
"""


def test_continental_sections_are_shown_with_one_section_sign(tmp_path, monkeypatch, capsys) -> None:
    # Given a German agreement whose sections are numbered "§ 1", "§ 2", ingested locally
    monkeypatch.setenv("LONGDOC_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("LONGDOC_MODEL", "baseline")
    wiring.reset()
    (tmp_path / "vertrag.txt").write_text(VERTRAG, encoding="utf-8")
    assert main(["ingest", str(tmp_path / "vertrag.txt")]) == 0
    capsys.readouterr()
    # When its chunk table is printed
    assert main(["chunks", "vertrag"]) == 0
    out = capsys.readouterr().out
    wiring.reset()
    # Then the section column reads "§ 1", never "§§ 1"
    assert "§ 1" in out and "§§" not in out
