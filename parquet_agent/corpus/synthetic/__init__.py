"""The synthetic SEC corpus: realistic, untidy filings at any scale, with a question set.

Modules, in the order data flows:

- `text`: the prose pool (templated boilerplate plus Zipf-vocabulary sentences) and OCR noise;
- `companies`: issuers, name variants, brands, and consistent quarterly financials;
- `plan`: which filing lands in which monthly file (forms, dates, accession numbers, untidiness);
- `covers` and `forms`: render one planned filing to Markdown, with exact quotes for its facts;
- `questions_gen`: questions, reference answers and gold evidence from the plan and the renders;
- `build`: `build_corpus(out, *, rows, seed=0, jobs=None) -> BuildResult`, the driver.
"""

from parquet_agent.corpus.synthetic.build import BuildResult, MonthFile, build_corpus

__all__ = ["BuildResult", "MonthFile", "build_corpus"]
