"""minify's worker side, with torch: the request loop (:mod:`.main`, ``python -m pt2kit.minify.worker.main.main``),
the fork server it is forked from (:mod:`.zygote`), and what a request runs: the original model
(:mod:`.work`, :mod:`.infer`, :mod:`.train`), its graphs as data (:mod:`.toir`), a bisection step
(:mod:`.bisectwork`); the private torch API behind :mod:`.torchapi`."""
