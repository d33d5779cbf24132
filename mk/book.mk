# Book part: lint of the plotting helpers, the book's own tests, and one execution per page.

.PHONY: lint-book test-book test-once

# book/_plots.py is linted like the package (the lead may add it to `make lint` instead).
lint-book: $(STAMP)
	$(VENV)/bin/ruff check book/_plots.py
	$(VENV)/bin/ruff format --check book/_plots.py

# The book's tests that do not execute pages: symbolic proofs, prose numbers, torch example.
test-book: $(STAMP)
	HYPOTHESIS_PROFILE=ci $(VENV)/bin/pytest -q -p no:cacheprovider tests/test_symbolic.py \
		tests/test_prose_numbers.py tests/test_book_quickstart_torch.py

# `make test` with the plotting helpers linted too.
test-once: lint-book test
