"""Template tests for issue 11: updates reach the extract path, alarms, load limits, retention,
access logs, pinned per-function builds. Each test fails on the template before that issue's fix.

The version-publishing tests run the real SAM transform (``samtranslator`` from the tools
virtualenv, see :func:`tests.infrastructure.cfn.transform`) and are skipped without it.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.infrastructure.cfn import (
    REPO,
    deployed_resources,
    load_template,
    props,
    tools_python,
    transform,
)

ASL = REPO / "statemachine" / "extract.asl.json"
_sam_missing = pytest.mark.skipif(not tools_python().exists(), reason="tools venv (samtranslator) not installed")


def needs_sam(test: Any) -> Any:
    """Skip ``test`` without the tools venv; mark it ``slow`` (SAM's transform runs there, in a subprocess)."""
    return pytest.mark.slow(_sam_missing(test))


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    """The parsed ``template.yaml``."""
    return load_template()


# --------------------------------------------------------------------------- finding 1: versions


def _packaged(template: dict[str, Any], layer_key: str = "layer-1.zip") -> dict[str, Any]:
    """The template as `sam package` leaves it: code and layer content as S3 URIs."""
    packaged = copy.deepcopy(template)
    for resource in packaged["Resources"].values():
        if resource["Type"] == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = "s3://artifacts/" + resource["Properties"]["CodeUri"].strip("/") + ".zip"
        if resource["Type"] == "AWS::Serverless::LayerVersion":
            resource["Properties"]["ContentUri"] = f"s3://artifacts/{layer_key}"
        if resource["Type"] == "AWS::Serverless::StateMachine":
            resource["Properties"]["DefinitionUri"] = "s3://artifacts/extract.asl.json"
    return packaged


_PARAMETERS = {"DeployRevision": "0123456789abcdef0123456789abcdef", "PineconeIndexHost": ""}


def _extract_version(transformed: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The logical id and resource of the extract function's published version."""
    [(logical_id, version)] = [(k, v) for k, v in transformed["Resources"].items()
                               if v["Type"] == "AWS::Lambda::Version" and k.startswith("ExtractFunctionVersion")]
    return logical_id, version


@needs_sam
def test_a_new_deploy_revision_publishes_a_new_extract_version(template: dict[str, Any]) -> None:
    # Given the packaged template deployed once, then again after a change SAM's own hash does not
    # see: a parameter value (PineconeIndexHost set after a first deploy with it empty), which
    # scripts/deploy_revision.py turns into a new DeployRevision
    first, _ = _extract_version(transform(_packaged(template), _PARAMETERS))
    same, _ = _extract_version(transform(_packaged(template), _PARAMETERS))
    changed, _ = _extract_version(transform(_packaged(template), {
        **_PARAMETERS, "PineconeIndexHost": "idx-abc.svc.pinecone.io", "DeployRevision": "f" * 32}))
    # When the version logical ids are compared
    # Then the unchanged deploy keeps its version and the changed one publishes a new one
    assert first == same
    assert changed != first


@needs_sam
def test_a_layer_change_reaches_the_extract_alias_through_the_revision(template: dict[str, Any]) -> None:
    # Given a deploy whose only change is the shared layer's content (a new S3 object), once with the
    # same DeployRevision (what SAM alone would do) and once with the revision the build gives
    base, _ = _extract_version(transform(_packaged(template), _PARAMETERS))
    stale, _ = _extract_version(transform(_packaged(template, "layer-2.zip"), _PARAMETERS))
    fresh, _ = _extract_version(transform(_packaged(template, "layer-2.zip"), {**_PARAMETERS, "DeployRevision": "a" * 32}))
    # Then SAM's hash alone misses the layer (the blocker of issue 11), the revision does not
    assert stale == base
    assert fresh != base


@needs_sam
def test_the_version_follows_the_revision_alone(template: dict[str, Any]) -> None:
    # Given the packaged template and a copy whose extract function only changes its memory size
    changed = _packaged(template)
    changed["Resources"]["ExtractFunction"]["Properties"]["MemorySize"] = 2048
    # When both are transformed with the same DeployRevision
    first, _ = _extract_version(transform(_packaged(template), _PARAMETERS))
    second, _ = _extract_version(transform(changed, _PARAMETERS))
    # Then SAM names the version after the revision alone (AutoPublishCodeSha256 replaces its
    # property hash), which is why the revision hashes the built template too (next tests)
    assert first == second == "ExtractFunctionVersion" + _PARAMETERS["DeployRevision"][:10]


@needs_sam
def test_superseded_extract_versions_are_deleted_and_the_state_machine_uses_the_alias(
    template: dict[str, Any],
) -> None:
    # Given the transformed template
    transformed = transform(_packaged(template), _PARAMETERS)
    logical_id, version = _extract_version(transformed)
    # When the version, the alias and the SnapStart setting are read
    [alias] = [v for v in transformed["Resources"].values() if v["Type"] == "AWS::Lambda::Alias"]
    function = transformed["Resources"]["ExtractFunction"]["Properties"]
    # Then CloudFormation deletes a replaced version (each kept SnapStart version is billed for its
    # snapshot), the alias "live" points at the new one, and SnapStart applies to published versions
    assert version.get("DeletionPolicy") == "Delete"
    assert alias["Properties"]["Name"] == "live"
    assert alias["Properties"]["FunctionVersion"] == {"Fn::GetAtt": [logical_id, "Version"]}
    assert function["SnapStart"] == {"ApplyOn": "PublishedVersions"}


def test_deploy_revision_is_required(template: dict[str, Any]) -> None:
    # Given the DeployRevision parameter
    parameter = template["Parameters"]["DeployRevision"]
    # Then a deploy without it fails (no default), and its pattern accepts the script's output
    assert "Default" not in parameter
    assert re.fullmatch(parameter["AllowedPattern"], "0123456789abcdef" * 2)
    assert props(template["Resources"], "ExtractFunction")["AutoPublishCodeSha256"] == {"Ref": "DeployRevision"}


def _revision(build: Path, samconfig: Path, *extra: str) -> str:
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "deploy_revision.py"), "--build-dir", str(build),
                           "--samconfig", str(samconfig), *extra], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_deploy_revision_changes_with_layer_content_and_parameter_values(tmp_path: Path) -> None:
    # Given a build folder with a template, a layer file and function code, and a samconfig
    build = tmp_path / "build"
    (build / "SharedLayer" / "python" / "longdoc").mkdir(parents=True)
    (build / "ExtractFunction").mkdir()
    (build / "template.yaml").write_text("Resources: {}\n")
    layer_file = build / "SharedLayer" / "python" / "longdoc" / "wiring.py"
    layer_file.write_text("VERSION = 1\n")
    (build / "ExtractFunction" / "app.py").write_text("def handler(e, c): ...\n")
    samconfig = tmp_path / "samconfig.toml"
    samconfig.write_text('version = 0.1\n[default.deploy.parameters]\nparameter_overrides = "Stage=dev"\n')
    # When the overrides are computed before and after each kind of change
    first = _revision(build, samconfig)
    again = _revision(build, samconfig)
    with_host = _revision(build, samconfig, "--set", "PineconeIndexHost=idx.svc.pinecone.io")
    layer_file.write_text("VERSION = 2\n")
    new_layer = _revision(build, samconfig)
    (build / "template.yaml").write_text("Resources: {ExtractFunction: {Properties: {MemorySize: 2048}}}\n")
    new_template = _revision(build, samconfig)
    # Then samconfig's overrides are repeated, a revision is appended, it is stable for the same
    # build and parameters, and it changes with a parameter value, the layer's content or any
    # property in the built template
    assert first.startswith("Stage=dev DeployRevision=")
    assert re.fullmatch(r"[0-9a-f]{32}", first.rsplit("=", 1)[1])
    assert first == again
    assert "PineconeIndexHost=idx.svc.pinecone.io" in with_host
    assert len({first, with_host.rsplit(" ", 1)[1], new_layer, new_template}) == 4


# --------------------------------------------------------------------------- finding 2: alarms


_ALARMS = {
    # logical id: (namespace, metric, dimension name, dimension value)
    "IngestDLQDepthAlarm": ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName",
                            {"Fn::GetAtt": ["IngestDLQ", "QueueName"]}),
    "IngestBacklogAgeAlarm": ("AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName",
                              {"Fn::GetAtt": ["IngestQueue", "QueueName"]}),
    "ExecutionsFailedAlarm": ("AWS/States", "ExecutionsFailed", "StateMachineArn", {"Ref": "ExtractStateMachine"}),
    "ExecutionsTimedOutAlarm": ("AWS/States", "ExecutionsTimedOut", "StateMachineArn", {"Ref": "ExtractStateMachine"}),
    "ExecutionsAbortedAlarm": ("AWS/States", "ExecutionsAborted", "StateMachineArn", {"Ref": "ExtractStateMachine"}),
    "ExecutionThrottledAlarm": ("AWS/States", "ExecutionThrottled", "StateMachineArn", {"Ref": "ExtractStateMachine"}),
    **{f"{fn}{metric}Alarm": ("AWS/Lambda", metric, "FunctionName", {"Ref": f"{fn}Function"})
       for fn in ("Ingest", "Extract", "Api", "Summarize", "Bulk", "ReviewMonitor") for metric in ("Errors", "Throttles")},
    **{f"Summary{metric}Alarm": ("AWS/States", metric, "StateMachineArn", {"Ref": "SummarizeStateMachine"})
       for metric in ("ExecutionsFailed", "ExecutionsTimedOut", "ExecutionsAborted")},
    **{f"Bulk{metric}Alarm": ("AWS/States", metric, "StateMachineArn", {"Ref": "BulkStateMachine"})
       for metric in ("ExecutionsFailed", "ExecutionsTimedOut", "ExecutionsAborted")},
    "RunsFailedAlarm": ({"Fn::Sub": "longdoc/${AWS::StackName}"}, "RunsFailed", "service", "longdoc"),
    "Api5xxAlarm": ("AWS/ApiGateway", "5XXError", "ApiName", {"Fn::Sub": "${AWS::StackName}-api"}),
    # the review loop (issue 29; tests/infrastructure/test_review_template.py checks the rest)
    **{alarm: ({"Fn::Sub": "longdoc/${AWS::StackName}"}, metric, "service", "longdoc")
       for alarm, metric in (("ReviewBacklogAgeAlarm", "OldestPendingReviewSeconds"),
                             ("StratumAccuracyAlarm", "MinStratumAccuracy"), ("SilentSourceAlarm", "SilentSourceRate"))},
}


@pytest.mark.parametrize("logical_id", sorted(_ALARMS))
def test_alarm_watches_its_metric_and_notifies_the_topic(template: dict[str, Any], logical_id: str) -> None:
    # Given one of the alarms the operations guide relies on
    resources = template["Resources"]
    namespace, metric, dimension, value = _ALARMS[logical_id]
    alarm = props(resources, logical_id)
    # When its metric and actions are read
    dimensions = {d["Name"]: d["Value"] for d in alarm["Dimensions"]}
    # Then it watches that metric of this stack's resource and notifies the alarm topic on
    # breach and on recovery; quiet periods are not breaches
    assert resources[logical_id]["Type"] == "AWS::CloudWatch::Alarm"
    assert (alarm["Namespace"], alarm["MetricName"]) == (namespace, metric)
    assert dimensions[dimension] == value
    assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}] == alarm["OKActions"]
    assert alarm["TreatMissingData"] == "notBreaching"
    if logical_id == "IngestDLQDepthAlarm":  # one message in the DLQ is already a failure
        assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")
    if logical_id == "Api5xxAlarm":
        assert dimensions["Stage"] == {"Ref": "Stage"}
        assert props(resources, "Api")["Name"] == value


def test_alarm_metrics_namespace_is_the_functions_namespace(template: dict[str, Any]) -> None:
    # Given the RunsFailed alarm and the functions' Powertools settings
    env = template["Globals"]["Function"]["Environment"]["Variables"]
    alarm = props(template["Resources"], "RunsFailedAlarm")
    # Then the alarm reads the namespace and service dimension the functions publish to
    assert alarm["Namespace"] == env["POWERTOOLS_METRICS_NAMESPACE"]
    assert {"Name": "service", "Value": env["POWERTOOLS_SERVICE_NAME"]} in alarm["Dimensions"]


@pytest.mark.parametrize(("email", "subscribed"), [("", False), ("ops@example.com", True)])
def test_alarm_topic_mails_the_optional_address(template: dict[str, Any], email: str, subscribed: bool) -> None:
    # Given the stack deployed with and without AlarmEmail
    deployed = deployed_resources(template, {"AlarmEmail": email})
    # Then the topic exists either way and an e-mail subscription only when an address is given
    assert deployed["AlarmTopic"]["Type"] == "AWS::SNS::Topic"
    assert ("AlarmEmailSubscription" in deployed) is subscribed
    if subscribed:
        assert props(deployed, "AlarmEmailSubscription") == {
            "TopicArn": {"Ref": "AlarmTopic"}, "Protocol": "email", "Endpoint": {"Ref": "AlarmEmail"}}
    policy = props(deployed, "AlarmTopicPolicy")["PolicyDocument"]["Statement"]
    assert {"Service": "cloudwatch.amazonaws.com"} in [s.get("Principal") for s in policy if s["Effect"] == "Allow"]


def test_dashboard_shows_queues_executions_functions_and_runs(template: dict[str, Any]) -> None:
    # Given the dashboard
    body = props(template["Resources"], "Dashboard")["DashboardBody"]["Fn::Sub"][0]
    # When the metrics it plots are read (placeholders left as text)
    # Then it covers the ingest queue and DLQ, executions, every function and the run counters
    for text in ("ApproximateAgeOfOldestMessage", "${IngestDLQ.QueueName}", "ExecutionsFailed", "${IngestFunction}",
                 "${ExtractFunction}", "${ApiFunction}", "RunsFailed", "5XXError", "${SummarizeFunction}",
                 "${SummarizeStateMachine}", "${BulkFunction}", "${BulkStateMachine}"):
        assert text in body
    json.loads(re.sub(r"\$\{[^}]+\}", "x", body))  # valid JSON once substituted


# --------------------------------------------------------------------------- finding 3: load limits


@pytest.mark.parametrize(("value", "reserved"), [("10", 10), ("0", None)])
def test_extract_reserved_concurrency_follows_the_parameter(template: dict[str, Any], value: str,
                                                            reserved: int | None) -> None:
    # Given the stack deployed with a reservation and with none (0)
    deployed = deployed_resources(template, {"ExtractReservedConcurrency": value})
    function = props(deployed, "ExtractFunction")
    # Then the extract function's concurrency is reserved at the parameter's value, or not at all
    assert function.get("ReservedConcurrentExecutions") == ({"Ref": "ExtractReservedConcurrency"} if reserved else None)
    assert template["Parameters"]["ExtractReservedConcurrency"]["Default"] >= 1


def _nominal_wait(retrier: dict[str, Any]) -> float:
    """Seconds of back-off a retrier allows before giving up (no jitter)."""
    interval, rate, cap = retrier["IntervalSeconds"], retrier.get("BackoffRate", 2.0), retrier.get("MaxDelaySeconds")
    delays = [interval * rate ** n for n in range(retrier["MaxAttempts"])]
    return sum(min(d, cap) if cap else d for d in delays)


@pytest.mark.parametrize("state", ["Extract", "RecordFailure"])
def test_lambda_throttling_is_retried_longer_than_one_session(template: dict[str, Any], state: str) -> None:
    # Given a Lambda task of the state machine and the extract function's timeout
    retry = json.loads(ASL.read_text(encoding="utf-8"))["States"][state]["Retry"]
    timeout = props(template["Resources"], "ExtractFunction")["Timeout"]
    # When its retrier for Lambda.TooManyRequestsException (reserved concurrency reached) is read
    [throttle] = [r for r in retry if "Lambda.TooManyRequestsException" in r["ErrorEquals"]]
    # Then throttling has a budget of its own whose expected wait with full jitter (half the
    # nominal back-off) outlasts one session, so a slot frees before the run fails; and the
    # transient Lambda service errors, ClientExecutionTimeoutException included, are retried too
    assert throttle["ErrorEquals"] == ["Lambda.TooManyRequestsException"]
    assert throttle["JitterStrategy"] == "FULL"
    assert _nominal_wait(throttle) / 2 >= timeout
    transient = {e for r in retry for e in r["ErrorEquals"]}
    assert {"Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException",
            "Lambda.ClientExecutionTimeoutException"} <= transient


def test_a_rerank_outage_is_retried_like_a_model_outage() -> None:
    # Given the Extract state's retriers
    retry = json.loads(ASL.read_text(encoding="utf-8"))["States"]["Extract"]["Retry"]
    # When the one for ModelUnavailable is read
    [model] = [r for r in retry if "ModelUnavailable" in r["ErrorEquals"]]
    # Then a reranker whose retries are spent (RerankUnavailable, raised before or between model
    # calls of a session, which restarts from its checkpoint) gets the same budget instead of failing the run
    assert "RerankUnavailable" in model["ErrorEquals"]
    assert "RerankRequestError" not in {e for r in retry for e in r["ErrorEquals"]}


def test_an_index_or_embedding_outage_is_retried_like_a_model_outage() -> None:
    # Given the Extract state's retriers
    retry = json.loads(ASL.read_text(encoding="utf-8"))["States"]["Extract"]["Retry"]
    # When the one for ModelUnavailable is read
    [model] = [r for r in retry if "ModelUnavailable" in r["ErrorEquals"]]
    # Then Pinecone or Voyage outages (their adapters' retries spent) get the same budget, as in the bulk
    # machine, instead of failing the run for an operator to redrive by hand
    assert {"IndexUnavailable", "EmbeddingUnavailable"} <= set(model["ErrorEquals"])
    assert model["MaxAttempts"] >= 5 and model["MaxDelaySeconds"] >= 300


def test_starting_runs_is_throttled_below_reads(template: dict[str, Any]) -> None:
    # Given the API's method settings
    settings = props(template["Resources"], "Api")["MethodSettings"]
    by_path = {(s["ResourcePath"], s["HttpMethod"]): s for s in settings}
    # Then every route that makes Claude work (POST /extractions, /summaries, /triage) has its own,
    # lower rate than the other routes
    default = by_path[("/*", "*")]
    for path in ("/~1extractions", "/~1summaries", "/~1triage"):
        start = by_path[(path, "POST")]
        assert start["ThrottlingRateLimit"] < default["ThrottlingRateLimit"], path
        assert start["ThrottlingBurstLimit"] < default["ThrottlingBurstLimit"], path


# --------------------------------------------------------------------------- finding 7: access logs


@pytest.mark.parametrize("enabled", ["true", "false"])
def test_api_access_logs_record_the_caller_identity(template: dict[str, Any], enabled: str) -> None:
    # Given the API deployed with access logging on and off
    deployed = deployed_resources(template, {"ApiAccessLogging": enabled})
    api = props(deployed, "Api")
    # Then, when on, each request's line carries the request id and the caller's IAM identity,
    # into a stack-owned log group with the stack's retention
    if enabled == "false":
        assert "AccessLogSetting" not in api and "ApiAccessLogGroup" not in deployed
        return
    setting = api["AccessLogSetting"]
    assert setting["DestinationArn"] == {"Fn::GetAtt": ["ApiAccessLogGroup", "Arn"]}
    line = json.loads(setting["Format"])
    assert {"requestId", "userArn", "caller", "accountId", "sourceIp", "status"} <= set(line)
    assert line["userArn"] == "$context.identity.userArn"
    assert props(deployed, "ApiAccessLogGroup")["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    assert template["Parameters"]["ApiAccessLogging"]["Default"] == "true"


# --------------------------------------------------------------------------- finding 8: retention


def test_bucket_lifecycle_expires_old_versions_and_the_embedding_cache(template: dict[str, Any]) -> None:
    # Given the bucket's lifecycle rules
    rules = {r["Id"]: r for r in props(template["Resources"], "DocumentsBucket")["LifecycleConfiguration"]["Rules"]}
    # Then noncurrent versions expire after the parameter's days, leftover delete markers and
    # incomplete uploads are cleaned up, the embedding cache expires on its own parameter, and no
    # rule expires current chunks (the citations' source of truth)
    assert all(r["Status"] == "Enabled" for r in rules.values())
    assert rules["ExpireNoncurrentVersions"]["NoncurrentVersionExpiration"] == {
        "NoncurrentDays": {"Ref": "NoncurrentVersionRetentionDays"}}
    assert rules["RemoveExpiredDeleteMarkers"]["ExpiredObjectDeleteMarker"] is True
    assert rules["AbortIncompleteMultipartUploads"]["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"] >= 1
    assert rules["ExpireEmbeddingCache"]["Prefix"] == "embeddings/"
    assert rules["ExpireEmbeddingCache"]["ExpirationInDays"] == {"Ref": "EmbeddingCacheRetentionDays"}
    # issue 26: job working data, results, summaries and the OCR cache expire on their own parameters;
    # nothing else (chunks/, incoming/) ever does
    expiring = {r["Prefix"]: r["ExpirationInDays"] for r in rules.values() if "ExpirationInDays" in r}
    assert expiring == {"embeddings/": {"Ref": "EmbeddingCacheRetentionDays"}, "bulk/": {"Ref": "BulkRetentionDays"},
                        "results/": {"Ref": "ResultsRetentionDays"}, "summaries/": {"Ref": "SummariesRetentionDays"},
                        "ocr/": {"Ref": "OcrCacheRetentionDays"}}


# --------------------------------------------------------------------------- finding 10: queues


@pytest.mark.parametrize(("policy", "queue"), [("IngestQueuePolicy", "IngestQueue"), ("IngestDLQPolicy", "IngestDLQ")])
def test_queue_policies_deny_requests_without_tls(template: dict[str, Any], policy: str, queue: str) -> None:
    # Given a queue's policy
    document = props(template["Resources"], policy)
    # Then it applies to that queue and denies every SQS action without TLS
    assert document["Queues"] == [{"Ref": queue}]
    [deny] = [s for s in document["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
    assert (deny["Principal"], deny["Action"]) == ("*", "sqs:*")
    assert deny["Resource"] == {"Fn::GetAtt": [queue, "Arn"]}
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


# --------------------------------------------------------------------------- finding 6: builds


_LOCK_LINE = re.compile(r"^([A-Za-z0-9_.-]+)(?:\[[A-Za-z0-9_., -]+\])?==([^ \\]+) \\$")
"""A pinned lock entry, its extras kept (``httpx[http2]==0.28.1``: ``make lock`` uses ``--no-strip-extras``)."""
# voyageai is never locked: its import loads ~140 MB (numpy, pillow, tokenizers, huggingface-hub,
# langchain); the functions call Voyage's REST endpoint (longdoc.adapters.voyage_http).
# pytesseract is the local OCR engine's binding: AWS reads scanned pages with Textract (boto3).
_HEAVY_UNUSED = {"voyageai", "numpy", "pillow", "tokenizers", "huggingface-hub", "langchain-core", "pytesseract"}
_PDF_STACK = {"pypdfium2", "pikepdf", "docx2python", "lxml", "beautifulsoup4"}
_NOT_IN = {
    # the API calls Claude for POST /triage (anthropic, imported by that route only)
    # and renders the review page's PDF page (GET /reviews/{item_id}/page-image: pypdfium2, JPEG through pillow)
    "api": (_PDF_STACK - {"pypdfium2"}) | {"pinecone"} | (_HEAVY_UNUSED - {"pillow"}),
    # OCR: pypdfium2 renders a scanned page to PNG through pillow (PdfBitmap.to_pil) for Textract
    "ingest": {"anthropic"} | (_HEAVY_UNUSED - {"pillow"}),
    "extract": _PDF_STACK | _HEAVY_UNUSED,
    "summarize": _PDF_STACK | {"pinecone", "tenacity"} | _HEAVY_UNUSED,
    # the review monitor reads DynamoDB and prints EMF lines: no model, PDF or index SDK
    "review_monitor": _PDF_STACK | {"anthropic", "pinecone", "tenacity"} | _HEAVY_UNUSED,
}


def _locked(function: str) -> dict[str, str]:
    """``{package: version}`` of a function's lock file; asserts every entry carries a hash."""
    text = (REPO / "functions" / function / "requirements.txt").read_text(encoding="utf-8")
    entries = [line for line in text.splitlines() if line and not line.startswith((" ", "#"))]
    pinned = {}
    for line in entries:
        match = _LOCK_LINE.match(line)
        assert match, f"{function}: not a pinned, hashed entry: {line!r}"
        pinned[match.group(1).lower()] = match.group(2)
    assert text.count("--hash=sha256:") >= len(pinned), function
    return pinned


@pytest.mark.parametrize("function", sorted(_NOT_IN))
def test_each_function_builds_from_its_own_hashed_lock(function: str) -> None:
    # Given the function's lock file and the layer's requirements
    pinned = _locked(function)
    layer = (REPO / "layers" / "longdoc" / "requirements.txt").read_text(encoding="utf-8")
    # Then every entry is pinned with hashes, the function carries none of the stacks it never
    # imports, boto3 and botocore are pinned together (no skew with the runtime's copy), the lock
    # matches its requirements.in, and the layer installs nothing (the package only)
    assert not set(pinned) & _NOT_IN[function]
    assert {"boto3", "botocore", "aws-lambda-powertools", "pydantic"} <= set(pinned)
    direct = (REPO / "functions" / function / "requirements.in").read_text(encoding="utf-8")
    for requirement in [line for line in direct.splitlines() if line and not line.startswith("#")]:
        name = re.split(r"[\[<>=!~ ]", requirement, maxsplit=1)[0].lower()
        assert name in pinned, (function, name)
    assert not [line for line in layer.splitlines() if line.strip() and not line.startswith("#")]


# --------------------------------------------------------------------------- Bedrock


def test_capability_table_names_the_template_defaults_of_each_provider(template: dict[str, Any]) -> None:
    # Given the model capability table and the template's model defaults
    from longdoc.core.cost import estimate_cost
    from longdoc.core.messages import Usage
    from longdoc.core.models_catalogue import DEFAULT_MODELS, rows, spec_for

    parameters = template["Parameters"]
    # Then each provider's default model (ClaudeModel for the Anthropic API, BedrockModelId for
    # Bedrock) is the table's default and a priced row of that provider, and the foundation model
    # is the Bedrock id behind that profile
    assert parameters["ClaudeModel"]["Default"] == DEFAULT_MODELS["anthropic"]
    assert parameters["BedrockModelId"]["Default"] == DEFAULT_MODELS["bedrock"]
    for provider, model in (("anthropic", parameters["ClaudeModel"]["Default"]),
                            ("bedrock", parameters["BedrockModelId"]["Default"])):
        spec = spec_for(model, provider)
        assert spec is not None and spec in rows(provider)
        assert estimate_cost(Usage(input_tokens=1), model) is not None
    foundation = parameters["BedrockFoundationModelId"]["Default"]
    assert foundation in spec_for(DEFAULT_MODELS["bedrock"], "bedrock").ids()  # type: ignore[union-attr]
    assert parameters["BedrockModelId"]["Default"].endswith(foundation)


_IMPORT_PROBE = """
import importlib.util, json, sys
from importlib.metadata import packages_distributions
for optional in {blocked!r}:  # optional imports (anthropic: aiohttp; httpcore2: h2) the lock leaves out
    sys.modules[optional] = None  # ImportError, as in Lambda where they are not installed
spec = importlib.util.spec_from_file_location("app", {path!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
{exercise}
dists = packages_distributions()
names = {{m.split(".")[0] for m, mod in list(sys.modules.items()) if mod is not None}} - set(sys.stdlib_module_names)
print(json.dumps(sorted({{d for m in names for d in dists.get(m, [])}})))
"""
# What each function imports lazily, only when a route or a step runs: Claude's client (Bedrock:
# no key needed), the routes' and steps' modules, and OCR (a page rendered to PNG, the Textract client).
_MODEL = "from longdoc import wiring; wiring.model()"
_EXERCISE = {
    "api": (_MODEL + "; import longdoc.triage.service, longdoc.summarize.runs, longdoc.eval.review_views\n"
            "import pypdfium2 as pdfium; from longdoc.eval.pdfpage import quote_on_page\n"  # the review page image
            "pdf = pdfium.PdfDocument.new(); pdf.new_page(72, 72); assert quote_on_page(pdf, 1, 'x').image"),
    "extract": _MODEL,
    "summarize": _MODEL + "; import longdoc.summarize.steps, longdoc.summarize.calls",
    "ingest": ("import pypdfium2 as pdfium; from longdoc.ingest.parse.ocr import page_image\n"
               "pdf = pdfium.PdfDocument.new(); pdf.new_page(72, 72); assert page_image(pdf, 0, 72)\n"
               "from longdoc import wiring; wiring.ocr_engine().client"),
    "review_monitor": "import longdoc.eval.accuracy, longdoc.review.gold; from longdoc import wiring; wiring.review_service()",
}


@pytest.mark.slow  # a fresh interpreter per function (about 4 CPU-s each)
@pytest.mark.parametrize("function", sorted(_NOT_IN))
def test_a_function_imports_only_distributions_its_lock_installs(function: str) -> None:
    # Given a fresh AWS-mode interpreter with the development environment's packages, Claude on Bedrock
    # (with the role's credentials in the environment, as Lambda sets them: the Bedrock client is
    # composed with them, resolved once through boto3's session)
    env = {"LONGDOC_MODE": "aws", "LONGDOC_BUCKET": "b", "LONGDOC_TABLE": "t", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
           "LONGDOC_MODEL": "claude", "LONGDOC_MODEL_PROVIDER": "bedrock",
           "PYTHONPATH": f"{REPO / 'layers' / 'longdoc'}:{REPO}", "PATH": "/usr/bin:/bin"}
    # When the handler module is imported as Lambda imports it, and its lazy imports run (the
    # model client, the route and step modules, OCR's page rendering and Textract client)
    locked = {re.sub(r"[-_.]+", "-", d) for d in _locked(function)}
    blocked = sorted({"aiohttp", "h2"} - locked)
    probe = _IMPORT_PROBE.format(path=str(REPO / "functions" / function / "app.py"), exercise=_EXERCISE[function],
                                 blocked=blocked)
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = {re.sub(r"[-_.]+", "-", d).lower() for d in json.loads(done.stdout.strip().splitlines()[-1])}
    # Then every distribution it loads is in its own lock (nothing the split left out); not counted:
    # longdoc itself (the layer), setuptools' site hook, and certifi, which botocore imports only if
    # present (it falls back to its own CA bundle, botocore/httpsession.py)
    assert loaded - locked - {"longdoc", "setuptools", "certifi"} == set()


@pytest.mark.parametrize("function", ["ingest", "extract", "bulk"])
def test_an_extra_a_dependency_asks_for_is_pinned_with_it(function: str) -> None:
    # pinecone requires httpx[http2]; pinned as bare httpx, pip's hash-checking mode in `sam build`
    # refuses the extra as unpinned as soon as a newer httpx than the lock's is released
    text = (REPO / "functions" / function / "requirements.txt").read_text(encoding="utf-8")
    assert re.search(r"^httpx\[http2\]==\S+ \\$", text, re.MULTILINE), function
    assert "--no-strip-extras" in (REPO / "Makefile").read_text(encoding="utf-8")
