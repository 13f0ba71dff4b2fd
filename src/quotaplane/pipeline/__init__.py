"""The Spark pipeline: `DataFrame -> DataFrame` policy transforms and the runs that wire them."""
