"""The host's load while a job runs: busy spans kept bounded, and which intervals meet them."""

from __future__ import annotations

import json

import numpy as np

from echo import hostload


def test_busy_samples_in_a_row_make_merged_bounded_spans(tmp_path, monkeypatch):
    sampler = hostload.LoadSampler.__new__(hostload.LoadSampler)  # the span logic alone, without its thread
    sampler.busy = []
    for t in (10.1, 10.5, 20.0):  # each the second busy sample in a row; 10.5 is within MERGE_GAP of 10.1's span
        sampler._busy_now(t)
    assert np.allclose(sampler.busy, [[9.9, 10.6], [19.8, 20.1]])
    monkeypatch.setattr(hostload, "MAX_SPANS", 2)
    sampler._busy_now(50.0)  # past the bound the last span runs on
    assert np.allclose(sampler.busy, [[9.9, 10.6], [19.8, 50.1]])


def test_a_real_sampler_writes_its_spans(tmp_path):
    sampler = hostload.LoadSampler(tmp_path)
    sampler.stop()
    sampler.samples = sampler.samples or [0]
    sampler.stop()
    load = json.loads((tmp_path / hostload.FILE).read_text())
    assert load["busy"] == [] or all(a < b for a, b in load["busy"]), load
    assert hostload.busy_spans(load, "another-host").shape == (0, 2)


def test_intervals_that_meet_a_span():
    spans = np.array([[10.0, 11.0], [20.0, 21.0]])
    start = np.array([0.0, 9.0, 10.5, 11.5, 19.0, 21.5, 5.0])
    end = np.array([1.0, 10.2, 10.6, 12.0, 25.0, 22.0, 30.0])
    assert hostload.overlaps(spans, start, end).tolist() == [False, True, True, False, True, False, True]
    assert hostload.overlaps(np.zeros((0, 2)), start, end).tolist() == [False] * 7
