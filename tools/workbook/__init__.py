"""The student workbook of the book: builder (:mod:`.build`), chapter reader (:mod:`.chapters`),
per-exercise checks (:mod:`.checks`, shipped with the workbook) and instructor-only solution
bindings (:mod:`.solutions`). Never imported by ``import refimpl``."""
