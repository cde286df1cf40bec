"""The loopback webs the tests and the benchmarks crawl: the sample web, the changing web,
the hostile web, the harvest web, the loopback Geminispace, and their shared HTTP core."""
