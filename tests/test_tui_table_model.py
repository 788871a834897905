"""The table model both tables share: sorting with unknown values last, and a cursor that stays on
its row (by key) when rows are sorted, filtered or replaced, and a view that follows it."""

from __future__ import annotations

from gputui.tui.widgets.table_model import ColumnSpec, TableRows, sort_items

PAGE = 3


def test_sort_items_puts_unknown_values_last_either_way_and_keeps_ties_in_order() -> None:
    items = [("a", 2), ("b", None), ("c", 1), ("d", 2), ("e", None)]
    value = lambda item: item[1]  # noqa: E731
    assert [k for k, _ in sort_items(items, value, False)] == ["c", "a", "d", "b", "e"]
    assert [k for k, _ in sort_items(items, value, True)] == ["a", "d", "c", "b", "e"]


def test_column_spec_alignment() -> None:
    spec = ColumnSpec[str]("n", "N", str, len, "right")
    assert spec.numeric and not ColumnSpec[str]("s", "S", str, str).numeric


def rows(keys: str) -> TableRows[str]:
    table: TableRows[str] = TableRows(lambda item: item)
    table.replace(list(keys), PAGE)
    return table


def test_the_cursor_stays_on_its_row_when_rows_reorder_or_go() -> None:
    table = rows("abcdef")
    assert (table.selected, table.cursor_key) == ("a", "a")
    table.move_to(2, PAGE)
    assert table.selected == "c"
    table.replace(list("fedcba"), PAGE)  # re-sorted: still on c
    assert (table.cursor, table.selected) == (3, "c")
    table.replace(list("fedba"), PAGE)  # c filtered out: the same place
    assert (table.cursor, table.selected) == (3, "b")
    table.replace(list("xy"), PAGE)  # fewer rows: the last
    assert (table.cursor, table.selected) == (1, "y")
    table.replace([], PAGE)
    assert (table.selected, table.cursor_key, table.cursor, table.top) == (None, None, 0, 0)


def test_the_view_follows_the_cursor() -> None:
    table = rows("abcdefghij")
    table.move_to(5, PAGE)
    assert table.top == 3  # rows 3-5 in view
    table.move_to(1, PAGE)
    assert table.top == 1
    table.move_to(99, PAGE)
    assert (table.cursor, table.top) == (9, 7)
    table.page_by(-1, PAGE)  # a page is two rows here (one kept for context)
    assert (table.cursor, table.top) == (7, 5)


def test_scrolling_the_view_leaves_the_cursor() -> None:
    table = rows("abcdefghij")
    assert table.scroll_to(4, PAGE)
    assert (table.top, table.cursor) == (4, 0)
    assert table.scroll_to(100, PAGE) and table.top == 7
    assert not table.scroll_to(7, PAGE)
    table.keep_cursor_in_view(PAGE)
    assert table.top == 0
    assert table.index_of("d") == 3 and table.index_of("z") is None
