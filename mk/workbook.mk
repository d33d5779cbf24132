# Student workbook (tools/workbook): notebooks built from the chapters, without solutions,
# rendered with the built book's numbers, values and figures (so they depend on `make book`).
#   make workbook             write workbook/ (one .ipynb per chapter; existing ones, with
#                             answers, are kept)
#   make workbook-instructor  write the instructor notebooks (solutions between nbgrader
#                             markers) into _build/workbook-instructor, outside the student's
#   make workbook-zip         _build/refimpl-workbook.zip (the workbook, its data, the package's
#                             wheel and a README: it runs without a clone)
#   make workbook-clean       remove the student workbook (answers included)
#   make test-workbook        every notebook Run All (stubs, then the book's solutions), and a
#                             chapter's download installed into a fresh venv and run
#   make lab                  install JupyterLab (pinned) and open the workbook in it
#                             (LAB_PORT=8888, LAB_ARGS='--no-browser' or '--allow-root' as needed)
WORKBOOK            := workbook
WORKBOOK_INSTRUCTOR := _build/workbook-instructor
JUPYTERLAB_PIN      := jupyterlab==4.6.6
LAB_STAMP           := $(VENV)/.installed-lab
LAB_PORT            ?= 8888
LAB_ARGS            ?=
WORKBOOK_PY         := PYTHONPATH=tools $(PY) -m workbook

.PHONY: workbook workbook-instructor workbook-zip workbook-clean test-workbook lab

workbook: $(STAMP) book
	$(WORKBOOK_PY) build --out $(WORKBOOK) --built _build --keep
	@echo "Workbook in $(CURDIR)/$(WORKBOOK): open it with 'make lab'."

workbook-instructor: $(STAMP) book
	$(WORKBOOK_PY) build --instructor --out $(WORKBOOK_INSTRUCTOR) --built _build
	@echo "Instructor notebooks in $(CURDIR)/$(WORKBOOK_INSTRUCTOR) (not in the student's folder)."

workbook-zip: workbook
	$(WORKBOOK_PY) zip --out $(WORKBOOK) _build/refimpl-workbook.zip

workbook-clean:
	rm -rf $(WORKBOOK) $(WORKBOOK_INSTRUCTOR)

test-workbook: $(STAMP) $(BOOK_DEP)
	REFIMPL_WORKBOOK_FULL=1 REFIMPL_BUILT_BOOK=1 HYPOTHESIS_PROFILE=ci \
		$(VENV)/bin/pytest -q -p no:cacheprovider -n $(PYTEST_JOBS) tests/test_workbook.py

$(LAB_STAMP): $(STAMP)
	$(PY) -m pip install -q "$(JUPYTERLAB_PIN)"
	touch $(LAB_STAMP)

lab: $(LAB_STAMP) workbook
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=$(CURDIR)/$(WORKBOOK) --ServerApp.port=$(LAB_PORT) \
		--LabApp.default_url=/lab/tree/quickstart.ipynb $(LAB_ARGS)
