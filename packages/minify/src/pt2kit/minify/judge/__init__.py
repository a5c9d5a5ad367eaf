"""Whether one candidate still fails as the failure it must show: what runs it (:mod:`.harness`), the verdict
of each kind (:mod:`.verdicts`), which functions judge a failure (:mod:`.plan`), what is loaded first
(:mod:`.loading`) and the repro's main (:mod:`.answer`). minify's workers judge every candidate with these,
and every repro.py embeds by source the functions of them its check reaches, so a query and its repro
are judged by the same code."""
