"""Filled PDF form fields (AcroForm): their values into the page text, where each field sits.

A filled form keeps what was typed into it (the tenant's name, the rent) as the value of
a widget annotation, not in the page's content stream, so PDFium's text page never holds
it. Read through PDFium's form support (``FPDFAnnot_GetFormFieldValue``, which needs the
document's form environment, ``FPDFDOC_InitFormFillEnvironment``; pypdfium2's
``PdfDocument.init_forms``), each filled field is written into the page text:

* after its label: the text printed to the left of the field on the field's own line
  (``1. Tenant name:`` + `` Jane Example``), when that label is found on a line of the
  page text;
* otherwise on a line of its own at the page's end, labelled as a field:
  ``Form field tenant_name: Jane Example``.

Text, combo-box and list-box fields give their value; a checked check box or radio button
gives ``☒`` (and its export value when that is a word other than ``Yes``/``On``); empty
and unchecked fields give nothing. ISO 32000-1, 12.7 "Interactive Forms".
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

FIELD_PREFIX = "Form field"
"""How a field whose label is not found is labelled at the page's end."""
_VALUE_TYPES = {pdfium_c.FPDF_FORMFIELD_TEXTFIELD, pdfium_c.FPDF_FORMFIELD_COMBOBOX, pdfium_c.FPDF_FORMFIELD_LISTBOX}
_CHECK_TYPES = {pdfium_c.FPDF_FORMFIELD_CHECKBOX, pdfium_c.FPDF_FORMFIELD_RADIOBUTTON}
_CHECKED = "☒"


@dataclass(frozen=True)
class FormField:
    """One filled widget: the field ``name``, the ``value`` to show, the ``label`` printed left of it."""

    name: str
    value: str
    label: str


def has_forms(pdf: pdfium.PdfDocument) -> bool:
    """Whether the document has an AcroForm or XFA form (``FPDF_GetFormType``); call before loading pages."""
    return bool(pdf.get_formtype() != pdfium_c.FORMTYPE_NONE)


def _wide(getter: Callable[..., Any], *args: Any) -> str:
    """A UTF-16LE string from a PDFium getter that takes ``(..., buffer, length)`` and returns bytes needed."""
    size = getter(*args, None, 0)
    if size <= 2:
        return ""
    buf = ctypes.create_string_buffer(size)
    getter(*args, ctypes.cast(buf, ctypes.POINTER(pdfium_c.FPDF_WCHAR)), size)
    return buf.raw[: size - 2].decode("utf-16-le", errors="replace")


def _shown_value(form: Any, annot: Any) -> str:
    """What a widget shows: a text or choice value, ``☒`` for a checked box, else ``""``."""
    kind = pdfium_c.FPDFAnnot_GetFormFieldType(form, annot)
    if kind in _VALUE_TYPES:
        return _wide(pdfium_c.FPDFAnnot_GetFormFieldValue, form, annot).strip()
    if kind in _CHECK_TYPES and pdfium_c.FPDFAnnot_IsChecked(form, annot):
        export = _wide(pdfium_c.FPDFAnnot_GetFormFieldExportValue, form, annot).strip()
        return _CHECKED if export.lower() in ("", "yes", "on") else f"{_CHECKED} {export}"
    return ""


def read_form_fields(pdf: pdfium.PdfDocument, page: pdfium.PdfPage, textpage: pdfium.PdfTextPage) -> list[FormField]:
    """The filled widgets of ``page`` in annotation order, with the text left of each as its label.

    ``pdf`` must have had ``init_forms()`` before ``page`` was loaded; without a form
    environment the list is empty. Closes every annotation it opens.
    """
    if pdf.formenv is None:
        return []
    form = pdf.formenv.raw
    fields: list[FormField] = []
    for index in range(pdfium_c.FPDFPage_GetAnnotCount(page.raw)):
        annot = pdfium_c.FPDFPage_GetAnnot(page.raw, index)
        try:
            if pdfium_c.FPDFAnnot_GetSubtype(annot) != pdfium_c.FPDF_ANNOT_WIDGET:
                continue
            value = _shown_value(form, annot)
            if not value:
                continue
            rect = pdfium_c.FS_RECTF()
            pdfium_c.FPDFAnnot_GetRect(annot, rect)
            label = textpage.get_text_bounded(left=0, bottom=rect.bottom, right=rect.left, top=rect.top)
            name = _wide(pdfium_c.FPDFAnnot_GetFormFieldName, form, annot)
            fields.append(FormField(name=name, value=value, label=" ".join(label.split())))
        finally:
            pdfium_c.FPDFPage_CloseAnnot(annot)
    return fields


def merge_form_fields(text: str, fields: list[FormField]) -> str:
    """``text`` (lines joined by ``\\n``) with each field's value written after its label.

    A field goes at the end of the first line, not yet given a field, that ends with its
    label (whitespace aside); a value already printed after its label is not repeated. A field whose
    label is empty or on no line is added at the page's end as ``Form field <name>: <value>``.
    """
    lines = text.split("\n")
    used: set[int] = set()
    trailing: list[str] = []
    flat = [" ".join(line.split()) for line in lines]
    for f in fields:
        if f.label and any(f.label in line and f.value in line[line.index(f.label):] for line in flat):
            continue  # printed already (a flattened copy of the form)
        at = next((i for i, line in enumerate(flat) if i not in used and f.label and line.endswith(f.label)), None)
        if at is None:
            trailing.append(f"{FIELD_PREFIX} {f.name or '?'}: {f.value}")
            continue
        used.add(at)
        lines[at] = f"{lines[at].rstrip()} {f.value}"
    return "\n".join(lines + trailing)
