"""Plots stay readable on degenerate data: fixed score ranges per component, a note on constant
components, sentences instead of empty axes, titles that never overlap."""

from __future__ import annotations

import pytest

from procrl.observe import plots
from procrl.observe import stats as diag

RECORD = diag.FirstErrorRecord


def _texts(figure) -> list[str]:
    texts = [t.get_text() for axis in figure.axes for t in axis.texts]
    if figure._suptitle is not None:
        texts.append(figure._suptitle.get_text())
    return texts


def _visible_axes(figure) -> list:
    return [axis for axis in figure.axes if axis.axison]


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_each_component_on_its_own_range():
    figure = plots.plot_component_distributions(
        {"acc": [1.0, 1.0, 1.0], "judge": [0.0, -0.5, 0.0], "info": [0.2, -0.3, None], "mine": [3.0, 7.0]},
        types={"acc": "accuracy", "judge": "first_error", "info": "receval_informativeness", "mine": "pkg:fn"},
    )
    acc, judge, info, mine = figure.axes
    assert acc.get_xlim()[0] < 0.0 and acc.get_xlim()[1] > 1.0 and acc.get_xlim()[1] < 1.1  # [0, 1], not around 1
    assert judge.get_xlim()[0] < -1.0 < 0.0 < judge.get_xlim()[1] < 0.1  # first_error on [-1, 0]
    assert info.get_xlim()[0] < -1.0 and info.get_xlim()[1] > 1.0
    assert 2.5 < mine.get_xlim()[0] < 3.0 and 7.0 < mine.get_xlim()[1] < 7.5  # unknown type: its data's range


def test_fallback_outside_the_range_widens_the_axis():
    figure = plots.plot_component_distributions({"judge": [-2.0, 0.0, -1.0]}, types={"judge": "first_error"})
    assert figure.axes[0].get_xlim()[0] < -2.0


def test_constant_and_empty_components_say_so():
    figure = plots.plot_component_distributions(
        {"accuracy": [1.0] * 8, "trace": [0.15] * 8, "judge": [None] * 8, "format": [0.0, 1.0, 0.5]},
        types={"judge": "first_error"},
    )
    texts = _texts(figure)
    assert "constant value 1" in texts and "constant value 0.15" in texts
    assert "no scores\n(all 8 none)" in texts
    assert not any("constant" in t for t in figure.axes[3].texts for t in [t.get_text()])  # format varies
    assert figure.axes[0].get_xlim()[0] < 0.0  # a constant 1.0 still on [0, 1]
    assert plots.figure_png(plots.plot_component_distributions({})).startswith(b"\x89PNG")
    assert "no reward components" in _texts(plots.plot_component_distributions({}))


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([RECORD(-1, 3)] * 5, "no errors found: all 5 judged completions have no wrong step"),
        (
            [RECORD(-1, 3)] * 3 + [RECORD(None, 0)] * 2,
            "no errors found: all 3 judged completions have no wrong step; 2 without a verdict",
        ),
        ([RECORD(None, 0)] * 4, "no verdicts: the judge gave none for the 4 completions"),
        ([], "no completions judged"),
    ],
)
def test_first_error_plot_without_errors_is_a_sentence(records, message):
    figure = plots.plot_first_error_histogram(records, title="first error (judge)")
    assert any(t.startswith(message) for t in _texts(figure)), _texts(figure)
    assert not _visible_axes(figure)  # no empty axes
    assert plots.figure_png(figure).startswith(b"\x89PNG")


def test_first_error_plot_has_fixed_axes():
    figure = plots.plot_first_error_histogram([RECORD(0, 4), RECORD(0, 4), RECORD(-1, 4), RECORD(None, 0)])
    absolute, relative = figure.axes
    assert relative.get_xlim() == (0.0, 1.0)
    assert absolute.get_xlim()[1] >= 4  # at least steps 0..4, even when every error is at step 0
    assert "errors in 2 of 3 judged completions, 1 without a verdict" in figure._suptitle.get_text()
    assert all(float(tick).is_integer() for tick in absolute.get_yticks())  # counts, not 0.5 steps


def test_heatmap_without_transitions_is_a_sentence_and_empty_rows_are_marked():
    empty = plots.plot_transition_heatmap([[0] * 8 for _ in range(8)], title="trace")
    assert any(t.startswith("no transitions") for t in _texts(empty)) and not _visible_axes(empty)
    matrix = [[0] * 8 for _ in range(8)]
    matrix[0][0] = 5
    figure = plots.plot_transition_heatmap(matrix, title="trace")
    title = figure.axes[0].get_title()
    assert "5 transitions" in title and "grey rows" in title
    image = figure.axes[0].images[0]
    assert image.get_array().mask[1].all() and not image.get_array().mask[0].any()  # rows 1..7 never followed


def test_titles_never_overlap():
    """Suptitle, panel titles and neighbouring axes do not overlap, with long component names."""
    scores = {
        name: [0.1 * i for i in range(10)]
        for name in (
            "accuracy",
            "a_rather_long_component_name_that_wraps",
            "another_long_custom_reward_name",
            "format",
            "receval_informativeness",
            "trace",
        )
    }
    types = {name: "my_package.rewards:some_function" for name in scores}
    figures = [
        plots.plot_component_distributions(scores, types=types),
        plots.plot_first_error_histogram([RECORD(i % 5, 6) for i in range(20)], title="first error (to step 1200)"),
        plots.plot_transition_heatmap(
            [[i + j for j in range(8)] for i in range(8)], title="trace: transitions (to step 9)"
        ),
    ]
    for figure in figures:
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        boxes = [axis.title.get_window_extent(renderer) for axis in figure.axes if axis.get_title()]
        if figure._suptitle is not None:
            boxes.append(figure._suptitle.get_window_extent(renderer))
        frames = [axis.get_window_extent(renderer) for axis in _visible_axes(figure)]
        for i, box in enumerate(boxes):
            assert not any(_overlap(box, other) for other in boxes[i + 1 :]), "titles overlap"
            assert not any(_overlap(box, frame) for frame in frames), "a title overlaps an axes"
