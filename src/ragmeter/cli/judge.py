"""``ragmeter judge``: faithfulness, relevance, claims, lexical, label, calibrate, claim-labels,
relevance-labels."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, TypeVar

import click

from ragmeter.cli._common import (
    console,
    executor_options,
    json_option,
    open_store,
    print_json,
    store_option,
)
from ragmeter.cli.relevance_labels import relevance_labels

F = TypeVar("F", bound=Callable[..., Any])


def _model_options(func: F) -> F:
    options = [
        click.option("--model", default=None, help="Judge model [env RAGMETER_JUDGE_MODEL]."),
        click.option(
            "--base-url",
            default=None,
            help="OpenAI-compatible /v1 URL [env RAGMETER_JUDGE_BASE_URL].",
        ),
        click.option("--timeout", type=float, default=None, help="Seconds per request."),
        click.option("--concurrency", type=int, default=None, help="Requests in flight."),
        click.option("--max-tokens", type=int, default=None, help="Completion budget per call."),
        click.option(
            "--max-response-bytes",
            type=click.IntRange(min=1),
            default=None,
            help="Largest judge reply read, decompressed (default 32 MiB) "
            "[ragmeter.toml [judge] max_response_bytes].",
        ),
        click.option(
            "--temperature",
            type=click.FloatRange(min=0),
            default=0.0,
            show_default=True,
            help="Sampling temperature of every request.",
        ),
        click.option("--seed", type=int, default=None, help="Sampling seed sent to the server."),
        click.option(
            "--repeats",
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            help="Send each request N times; the verdict is the majority.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return executor_options(func)


def _client(options: dict[str, Any], store: Any) -> Any:
    from ragmeter.config import load_config
    from ragmeter.executors.ray import executor_for
    from ragmeter.judge.config import resolve_judge_config

    # Names become objects at this boundary (--executor local|ray, --ray-address).
    executor = executor_for(options.pop("executor"), ray_address=options.pop("ray_address"))
    sampling = {name: options.pop(name) for name in ("temperature", "seed", "repeats")}
    # The only place the judge's environment is read (keys included).
    config = resolve_judge_config(env=os.environ, settings=load_config().judge, **options)
    return config.client(cache=store, executor=executor, **sampling)


def _print_judgement(result: Any) -> None:
    out = console()
    usage = result.usage
    out.print(
        f"run {result.run.id} ({result.run.name}): {result.judge} judged by {result.source}: "
        f"{result.n_verdicts}/{result.n_cases} verdicts, {len(result.errors)} errors, "
        f"{result.skipped} skipped"
    )
    cost = "unknown" if usage["cost"] is None else f"${usage['cost']:.4f}"
    out.print(
        f"requests {usage['requests']}, cached {usage['cached']}, retries {usage['retries']}, "
        f"tokens {usage['prompt_tokens']}+{usage['completion_tokens']}, cost {cost}"
    )
    for name, value in result.metrics.items():
        out.print(f"{name} = {value:.3f}")
    if result.calibration is None:
        out.print("judge not calibrated: run `ragmeter judge calibrate` before trusting it")
    elif result.calibration["flagged"]:
        # Flagged covers "too few labels to tell" too (issue 17.3); calibrate says which.
        out.print(
            f"judge calibration flagged (agreement {result.calibration['agreement']:.0%}): "
            "not trusted; `ragmeter judge calibrate` says whether to tighten the prompt "
            "or label more"
        )
    else:
        out.print(f"judge calibrated: agreement {result.calibration['agreement']:.0%}")
    stability = result.stability
    if stability.get("repeats", 1) > 1:
        listed = ", ".join(stability["unstable"][:10]) + (
            " …" if stability["n_unstable"] > 10 else ""
        )
        out.print(
            f"repeats {stability['repeats']}: {stability['n_unstable']} unstable "
            f"(repeats disagreed){': ' + listed if listed else ''}; "
            f"expected flips with one more repeat: {stability['expected_flips']:.2f}"
        )
    for item_id, error in list(result.errors.items())[:10]:
        out.print(f"  error {item_id}: {error}")


@click.group("judge")
def judge() -> None:
    """Judge answers and chunks with a model you configure, and calibrate the judge.

    Configure the model with --model/--base-url, RAGMETER_JUDGE_MODEL /
    RAGMETER_JUDGE_BASE_URL / RAGMETER_JUDGE_API_KEY, or [judge] in ragmeter.toml.
    """


judge.add_command(relevance_labels)


@judge.command("faithfulness")
@click.argument("run_ref", metavar="RUN", default="latest")
@_model_options
@store_option
@json_option
def faithfulness(run_ref: str, store_url: str | None, as_json: bool, **options: Any) -> None:
    """Is every claim of each answer supported by its context? Sets metric `faithful`."""
    from ragmeter.judging.judge_runs import judge_run_faithfulness

    with open_store(store_url) as store:
        result = judge_run_faithfulness(store, run_ref, client=_client(options, store))
    print_json(result.to_dict()) if as_json else _print_judgement(result)


@judge.command("lexical")
@click.argument("run_ref", metavar="RUN", default="latest")
@store_option
@json_option
def lexical(run_ref: str, store_url: str | None, as_json: bool) -> None:
    """Offline baseline: flag answer sentences whose numbers and names are not in the context."""
    from ragmeter.judging.judge_runs import judge_run_faithfulness

    with open_store(store_url) as store:
        result = judge_run_faithfulness(store, run_ref, client=None)
    print_json(result.to_dict()) if as_json else _print_judgement(result)


@judge.command("relevance")
@click.argument("run_ref", metavar="RUN", default="latest")
@click.option("--fill-with-judge", is_flag=True, help="Rescore the run with gold + judge labels.")
@_model_options
@store_option
@json_option
def relevance(
    run_ref: str, fill_with_judge: bool, store_url: str | None, as_json: bool, **options: Any
) -> None:
    """Grade retrieved chunks the gold set does not label (0-3, with a reason)."""
    from ragmeter.judging.judge_runs import judge_run_relevance

    with open_store(store_url) as store:
        result = judge_run_relevance(
            store, run_ref, client=_client(options, store), fill_with_judge=fill_with_judge
        )
    print_json(result.to_dict()) if as_json else _print_judgement(result)


# Column headers of the per-tag table (the metric names are long for a terminal).
_SHORT = {
    "context_claim_recall": "claim recall",
    "noise_sensitivity": "noise",
    "noise_sensitivity_relevant": "noise rel.",
    "noise_sensitivity_irrelevant": "noise irrel.",
    "context_utilisation": "utilisation",
}


def _print_claims(result: Any) -> None:
    from ragmeter.cli._safe import safe

    _print_judgement(result)
    if not result.by_tag:
        return
    from rich.table import Table

    from ragmeter.metrics.claims import CLAIM_METRICS

    table = Table(title="claim metrics by tag", title_justify="left")
    table.add_column("tag")
    for name in CLAIM_METRICS:
        table.add_column(_SHORT.get(name, name), justify="right")
    for tag, values in result.by_tag.items():
        cells = [f"{values[n]:.3f}" if n in values else "-" for n in CLAIM_METRICS]
        table.add_row(safe(tag), *cells)
    console().print(table)


@judge.command("claims")
@click.argument("run_ref", metavar="RUN", default="latest")
@click.option(
    "--lexical", is_flag=True, help="Offline: claims are sentences, entailment the lexical rule."
)
@_model_options
@store_option
@json_option
def claims(
    run_ref: str, lexical: bool, store_url: str | None, as_json: bool, **options: Any
) -> None:
    """Split answers and reference answers into claims; check each against each chunk.

    Sets context_claim_recall, hallucination, noise_sensitivity (relevant and
    irrelevant chunks apart) and context_utilisation, and refines blame in `show`.
    """
    from ragmeter.judging.judge_runs import judge_run_claims

    with open_store(store_url) as store:
        client = None if lexical else _client(options, store)
        result = judge_run_claims(store, run_ref, client=client)
    print_json(result.to_dict()) if as_json else _print_claims(result)


def _set_path(path: str | None) -> str:
    from ragmeter.examples import example_calibration_path

    return path or str(example_calibration_path())


@judge.command("label")
@click.argument("set_file", required=False, type=click.Path())
@click.option("--set", "set_name", default="calibration", show_default=True)
@click.option("--all", "relabel", is_flag=True, help="Also show items already labelled.")
@store_option
def label(set_file: str | None, set_name: str, relabel: bool, store_url: str | None) -> None:
    """Label answers by hand: supported (y) or not (n); s skips, q quits.

    Ctrl-C keeps every label given so far. SET_FILE defaults to the bundled set.
    """
    from ragmeter.judging.calibration import load_calibration_set
    from ragmeter.judging.labelling import label_items

    items = load_calibration_set(_set_path(set_file))
    with open_store(store_url) as store:
        done = label_items(
            items,
            store=store,
            set_name=set_name,
            relabel=relabel,
            ask=lambda prompt: click.prompt(prompt, default="s", show_default=False),
            show=console().print,
        )
    click.echo(f"{done} label(s) saved to set {set_name!r}")


@judge.command("calibrate")
@click.argument("set_file", required=False, type=click.Path())
@click.option(
    "--judge",
    "judge_kind",
    type=click.Choice(["faithfulness", "lexical", "claims", "lexical-claims"]),
    default="faithfulness",
    show_default=True,
    help="Which judge: a model (faithfulness, claims) or the offline rule (lexical, ...).",
)
@click.option("--set", "set_name", default="calibration", show_default=True)
@click.option(
    "--suggest",
    type=click.IntRange(min=0),
    default=0,
    help="List N unlabelled items to label next, disagreement-prone first.",
)
@_model_options
@store_option
@json_option
def calibrate(
    set_file: str | None,
    judge_kind: str,
    set_name: str,
    suggest: int,
    store_url: str | None,
    as_json: bool,
    **options: Any,
) -> None:
    """Agreement with people, with 95% intervals; flags a lower bound under 85%.

    Prints agreement (Wilson interval), kappa (bootstrap interval), the confusion
    matrix, precision/recall per label, the disagreements and the set's
    faithfulness corrected by the labels (prediction-powered, with its interval).
    """
    from ragmeter.judging.calibration import load_calibration_set
    from ragmeter.judging.judge_runs import calibrate as run_calibration

    items = load_calibration_set(_set_path(set_file))
    with open_store(store_url) as store:
        model = judge_kind in ("faithfulness", "claims")
        client = _client(options, store) if model else None
        kind = "claims" if judge_kind.endswith("claims") else "faithfulness"
        result, batch = run_calibration(
            items, client=client, store=store, set_name=set_name, judge=kind
        )
    suggestions = result.suggest(suggest)
    from ragmeter.judge.claims import mean_metrics

    claim_means = mean_metrics(batch.verdicts) if kind == "claims" else {}
    if as_json:
        extra: dict[str, Any] = {"suggestions": [asdict(s) for s in suggestions]} if suggest else {}
        if claim_means:
            extra["claim_metrics"] = {k: {"mean": m, "n": n} for k, (m, n) in claim_means.items()}
        usage = batch.usage.to_dict()
        print_json({**result.to_dict(), **extra, "usage": usage, "errors": batch.errors})
        return
    from ragmeter.cli._safe import safe
    from ragmeter.judging.labelling import print_calibration, print_suggestions

    def show(text: str) -> None:
        # Reasons quote answers: `[tool.uv]` is text, not rich markup.
        console().print(safe(text))

    print_calibration(result, batch, show)
    for name, (mean, n) in claim_means.items():
        show(f"{name} on this set: {mean:.3f} ({n} items)")
    if suggest:
        print_suggestions(suggestions, show)


def _add_claim_labels() -> None:
    from ragmeter.cli.claim_labels import claim_labels

    judge.add_command(claim_labels)


_add_claim_labels()
