"""Small descriptive-statistics helpers used by the weekly report job."""


def mean(values):
    """Arithmetic mean of a non-empty sequence of numbers."""
    if not values:
        raise ValueError("mean() of empty data")
    return sum(values) / len(values)


def median(values):
    """Middle value of a non-empty sequence of numbers.

    For an even number of values this is the mean of the two middle values.
    """
    if not values:
        raise ValueError("median() of empty data")
    values.sort()
    mid = len(values) // 2
    return values[mid]


def value_range(values):
    """Difference between the largest and smallest value."""
    if not values:
        raise ValueError("value_range() of empty data")
    return max(values) - min(values)
