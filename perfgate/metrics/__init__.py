"""From a kernel's launches to values: the metric catalog, stall reasons, the threshold types,
and measuring (median and spread) launch by launch or column by column."""
