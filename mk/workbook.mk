# Student workbook (tools/workbook): notebooks built from the chapters, without solutions.
#   make workbook        write workbook/ (one .ipynb per chapter; existing ones, with answers, are kept)
#                        and workbook-instructor/ (solutions between nbgrader markers)
#   make workbook-zip    _build/refimpl-workbook.zip (the workbook and the data it reads)
#   make workbook-clean  remove both folders (answers included)
#   make lab             install JupyterLab (pinned) and open the workbook in it
#                        (LAB_PORT=8888, LAB_ARGS='--no-browser' or '--allow-root' as needed)
WORKBOOK            := workbook
WORKBOOK_INSTRUCTOR := workbook-instructor
JUPYTERLAB_PIN      := jupyterlab==4.6.6
LAB_STAMP           := $(VENV)/.installed-lab
LAB_PORT            ?= 8888
LAB_ARGS            ?=
WORKBOOK_PY         := PYTHONPATH=tools $(PY) -m workbook

.PHONY: workbook workbook-zip workbook-clean lab

workbook: $(STAMP)
	$(WORKBOOK_PY) build --out $(WORKBOOK) --instructor $(WORKBOOK_INSTRUCTOR) --keep
	@echo "Workbook in $(CURDIR)/$(WORKBOOK): open it with 'make lab'."

workbook-zip: workbook
	$(WORKBOOK_PY) zip --out $(WORKBOOK) _build/refimpl-workbook.zip

workbook-clean:
	rm -rf $(WORKBOOK) $(WORKBOOK_INSTRUCTOR)

$(LAB_STAMP): $(STAMP)
	$(PY) -m pip install -q "$(JUPYTERLAB_PIN)"
	touch $(LAB_STAMP)

lab: $(LAB_STAMP) workbook
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=$(CURDIR)/$(WORKBOOK) --ServerApp.port=$(LAB_PORT) \
		--LabApp.default_url=/lab/tree/quickstart.ipynb $(LAB_ARGS)
