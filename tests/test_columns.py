"""embedkit.data.columns: every column's role, read from its values or named, each mistake named
with its fix."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from embedkit import ColumnRoles, infer_columns


# -- roles -----------------------------------------------------------------------------------
def test_every_column_gets_its_role_from_its_values(reviews):
    roles = infer_columns(reviews, target="label")
    assert roles == ColumnRoles(text=("title", "body"), categorical=("department",),
                                numeric=("age", "stars"),
                                inferred=("title", "body", "department", "age", "stars"))
    assert roles.describe() == ("columns: text title, body; categorical department; numeric age, "
                                "stars (inferred; name them with --text-column or --column "
                                "NAME:categorical|numeric)")
    assert roles.role("stars") == "numeric" and roles.columns[-1] == "stars"
    with pytest.raises(KeyError):
        roles.role("label")


def test_named_roles_are_kept_and_the_rest_inferred(reviews):
    roles = infer_columns(reviews, target="label", text="body", categorical=["stars"])
    assert roles.text == ("body", "title") and roles.categorical == ("stars", "department")
    assert roles.numeric == ("age",) and roles.inferred == ("title", "department", "age")
    assert "split" not in roles.columns and "label" not in roles.columns
    named = infer_columns(reviews[["body", "age"]], text=["body"], numeric=["age"])
    assert named.describe() == "columns: text body; numeric age" and named.inferred == ()


def test_many_short_values_of_a_large_table_are_categories_and_unique_ones_text():
    rng = np.random.default_rng(0)
    n = 1000
    df = pd.DataFrame({
        "keyword": rng.choice([f"word{i}" for i in range(45)], size=n),  # 45 <= 5% of 1000
        "city": rng.choice([f"city {i}" for i in range(60)], size=n),  # 60 > max(20, 50)
        "note": [f"note number {i}" for i in range(n)],
        "flag": rng.choice([True, False], size=n),
        "when": pd.Categorical(rng.choice(["am", "pm"], size=n)),
    })
    roles = infer_columns(df)
    assert roles.categorical == ("keyword", "when") and roles.numeric == ("flag",)
    assert roles.text == ("city", "note")


@pytest.mark.parametrize("kwargs, message", [
    ({"text": ["titel"]}, r"column 'titel' \(named as text\) is not in the table\. Did you mean "
                          r"'title'\? Its columns: title, body, department, age, stars, label, split\."),
    ({"target": "lable"}, r"column 'lable' \(the target\) is not in the table\. Did you mean 'label'"),
    ({"text": ["title"], "categorical": ["title"]},
     r"column 'title' is given two roles, text and categorical; name each column in one role"),
    ({"target": "label", "categorical": ["label"]}, r"column 'label' is the target"),
    ({"target": "label", "numeric": ["title"]},
     r"column 'title' is numeric but holds text at rows 0 \('Lovely dress'\), 1 \('Poor fit'\), "
     r"2 \('Great colour'\), 4 \('Too small'\), 5 \('Soft and warm'\) and 2 more \(positions "
     r"from 0\)\. Clean those values, or name 'title' as a categorical or text column"),
])
def test_each_mistake_is_named_with_its_fix(reviews, kwargs, message):
    with pytest.raises(ValueError, match=message):
        infer_columns(reviews, **kwargs)


def test_a_numeric_column_with_a_few_words_names_them_and_no_text_column_is_refused(reviews):
    df = reviews.assign(age=["34", "forty", "", None, "45", "n/a", "39", "30"])
    assert infer_columns(df, target="label").role("age") == "text"  # not all numbers: not numeric
    with pytest.raises(ValueError, match=r"holds text at rows 1 \('forty'\), 5 \('n/a'\) \(posi"):
        infer_columns(df, numeric=["age"])
    with pytest.raises(ValueError, match=r"the table has no text column \(categorical department; "
                                         r"numeric age\); name the column that holds the text"):
        infer_columns(reviews[["department", "age"]])
    with pytest.raises(ValueError, match=r"column 'when' holds datetime64.* convert it"):
        infer_columns(reviews.assign(when=pd.Timestamp("2024-01-01")), target="label")
    with pytest.raises(ValueError, match="takes a pandas DataFrame; got a list"):
        infer_columns([["a", 1]])


