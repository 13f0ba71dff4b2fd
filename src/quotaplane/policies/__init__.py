"""Pure-Python reference engines, one package per policy: the oracle the Spark pipeline is tested against."""
