"""The week `amtuner bench advise-week` records: its size, its days and its hours, as its module
says (the timing itself is the bench's, in docs/advise.md, never asserted here)."""

from __future__ import annotations

from collections import Counter

from amtuner.bench import advise_week as week


def test_the_week_is_sixty_thousand_apps_busy_by_day_and_on_weekdays() -> None:
    workload = week.week_workload()
    jobs = workload.jobs
    assert len(jobs) == 5 * week.WEEKDAY_APPS + 2 * week.WEEKEND_APPS == 60_000
    assert workload.nodes == 1000 and set(workload.queues) == set(week.QUEUES)
    days = Counter(int(j.submit_s // week.DAY_S) for j in jobs)
    assert [days[d] for d in range(7)] == [10_000] * 5 + [5_000] * 2
    hours = Counter(int(j.submit_s % week.DAY_S // 3600) for j in jobs)
    night = week.PEAK_HOUR - 12
    assert hours[week.PEAK_HOUR] > 5 * hours[night]  # the rate's swing is 9 to 1
    assert {j.queue for j in jobs} == set(week.QUEUES)
    maps = sum(g.count for j in jobs for g in j.maps)
    assert maps == sum(week.MAPS_PER_APP * days[d] for d in range(7))
    assert week.week_workload().jobs == jobs  # the same seed, the same week
