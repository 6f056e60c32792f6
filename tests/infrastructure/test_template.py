"""Static checks of the SAM application in ``template.yaml``.

These tests read the template (and the state machine definition it points at) as data
and assert the security, reliability and wiring properties the deployment relies on.
They never call AWS. ``make lint-template`` runs cfn-lint and ``sam validate --lint``
separately; :func:`test_cfn_lint_reports_no_findings` repeats the cfn-lint run when the
tools virtualenv exists.
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import pytest

from longdoc.config import (
    ApiFunctionSettings,
    BulkApiSettings,
    ExtractFunctionSettings,
    IngestFunctionSettings,
    ReviewMonitorSettings,
    Settings,
    SummaryApiSettings,
)
from longdoc.config import SummarizeSettings
from tests.infrastructure.cfn import (
    FUNCTIONS,
    REPO,
    TEMPLATE_PATH,
    TOOLS_BIN,
    actions_by_resource,
    as_list,
    deployed_resources,
    evaluate,
    inline_statements,
    load_template,
    props,
    role_statements,
    sub_text,
    walk,
)

CFN_LINT = TOOLS_BIN / "cfn-lint"


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    """The parsed ``template.yaml``."""
    return load_template()


@pytest.fixture(scope="module")
def resources(template: dict[str, Any]) -> dict[str, Any]:
    """``Resources`` section of the template."""
    return template["Resources"]


# --------------------------------------------------------------------------- storage


def test_bucket_blocks_public_access_encrypts_and_versions(resources: dict[str, Any]) -> None:
    # Given the documents bucket
    bucket = props(resources, "DocumentsBucket")
    # When its access, encryption, versioning and ownership settings are read
    block = bucket["PublicAccessBlockConfiguration"]
    sse = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    # Then all four public-access blocks are on, SSE-S3 is the default, versioning is on
    # and ACLs are disabled.
    assert block == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert sse == [{"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
    assert bucket["VersioningConfiguration"] == {"Status": "Enabled"}
    assert bucket["OwnershipControls"]["Rules"] == [{"ObjectOwnership": "BucketOwnerEnforced"}]


def test_bucket_policy_denies_requests_without_tls(resources: dict[str, Any]) -> None:
    # Given the bucket policy
    policy = props(resources, "DocumentsBucketPolicy")
    # When the statements that deny on aws:SecureTransport=false are selected
    deny = [
        s
        for s in policy["PolicyDocument"]["Statement"]
        if s["Effect"] == "Deny" and s.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport") == "false"
    ]
    # Then one statement denies every S3 action, to everyone, on the bucket and its objects
    assert policy["Bucket"] == {"Ref": "DocumentsBucket"}
    assert len(deny) == 1
    assert deny[0]["Principal"] == "*"
    assert deny[0]["Action"] == "s3:*"
    assert deny[0]["Resource"] == [
        {"Fn::GetAtt": ["DocumentsBucket", "Arn"]},
        {"Fn::Sub": "${DocumentsBucket.Arn}/*"},
    ]


def test_bucket_notifies_ingest_queue_for_incoming_prefix_only(resources: dict[str, Any]) -> None:
    # Given the bucket's notification configuration
    bucket = resources["DocumentsBucket"]
    queue_configs = bucket["Properties"]["NotificationConfiguration"]["QueueConfigurations"]
    # When the queue configurations are read
    # Then object creation and removal under incoming/ (and nothing else) go to the ingest
    # queue, and the bucket waits for the queue policy that lets S3 send.
    assert sorted(c["Event"] for c in queue_configs) == ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]
    for config in queue_configs:
        assert config["Queue"] == {"Fn::GetAtt": ["IngestQueue", "Arn"]}
        assert config["Filter"]["S3Key"]["Rules"] == [{"Name": "prefix", "Value": "incoming/"}]
    assert bucket["DependsOn"] == "IngestQueuePolicy"


def test_queue_policy_source_arn_matches_bucket_name_without_referencing_bucket(
    resources: dict[str, Any],
) -> None:
    # Given the bucket name expression and the queue policy's aws:SourceArn condition
    bucket_name = props(resources, "DocumentsBucket")["BucketName"]
    statement = props(resources, "IngestQueuePolicy")["PolicyDocument"]["Statement"][0]
    source_arn = statement["Condition"]["ArnEquals"]["aws:SourceArn"]
    # When both are evaluated for a sample stack
    pseudo = {
        "AWS::Partition": "aws",
        "AWS::AccountId": "123456789012",
        "AWS::StackId": "arn:aws:cloudformation:eu-west-1:123456789012:stack/LongDoc-Dev/1b2c3d4e-aaaa-11ef-9f0a-0a1b2c3d4e5f",
        "Stage": "dev",
    }
    name = evaluate(bucket_name, pseudo)
    # Then the policy names exactly that bucket, only S3 from this account may send,
    # and the policy does not reference the bucket resource (which depends on it: a cycle).
    assert evaluate(source_arn, pseudo) == f"arn:aws:s3:::{name}"
    assert statement["Principal"] == {"Service": "s3.amazonaws.com"}
    assert statement["Action"] == "sqs:SendMessage"
    assert statement["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    referenced = {
        n["Ref"] if "Ref" in n else n["Fn::GetAtt"][0]
        for n in walk(props(resources, "IngestQueuePolicy"))
        if isinstance(n, dict) and ("Ref" in n or "Fn::GetAtt" in n)
    }
    assert referenced == {"IngestQueue", "AWS::AccountId", "AWS::StackId"}


def test_bucket_name_is_valid_for_any_stack_name_and_longest_stage(
    template: dict[str, Any], resources: dict[str, Any]
) -> None:
    # Given a stack name with capitals and the longest Stage the parameter pattern accepts
    stage_pattern = template["Parameters"]["Stage"]["AllowedPattern"]
    longest_stage = "s" * 10
    assert re.fullmatch(stage_pattern, longest_stage)
    assert not re.fullmatch(stage_pattern, "Dev")
    pseudo = {
        "AWS::AccountId": "123456789012",
        "AWS::StackId": "arn:aws:cloudformation:ap-southeast-2:123456789012:stack/My-Big-STACK/51af3dc0-da77-11e4-872e-1234567db123",
        "Stage": longest_stage,
    }
    # When the bucket name is evaluated
    name = evaluate(props(resources, "DocumentsBucket")["BucketName"], pseudo)
    # Then it obeys the S3 general-purpose bucket naming rules (3-63 chars, lowercase,
    # digits, hyphens, starts/ends with a letter or digit) and ends with the stack-id group.
    assert name == "longdoc-ssssssssss-documents-123456789012-1234567db123"
    assert re.fullmatch(r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]", name)


def test_table_is_on_demand_with_pitr_ttl_and_retained(template: dict[str, Any], resources: dict[str, Any]) -> None:
    # Given the DynamoDB table
    table = resources["Table"]
    table_props = table["Properties"]
    # When its key schema, billing and protection settings are read
    keys = {k["AttributeName"]: k["KeyType"] for k in table_props["KeySchema"]}
    # Then it is pk/sk, on demand, recoverable, expires items on expires_at and survives
    # stack deletion/replacement (with deletion protection in prod).
    assert keys == {"pk": "HASH", "sk": "RANGE"}
    assert table_props["BillingMode"] == "PAY_PER_REQUEST"
    assert table_props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert table_props["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert table_props["SSESpecification"] == {"SSEEnabled": True}
    assert table_props["DeletionProtectionEnabled"] == {"Fn::If": ["IsProd", True, False]}
    assert template["Conditions"]["IsProd"] == {"Fn::Equals": [{"Ref": "Stage"}, "prod"]}
    assert table["DeletionPolicy"] == "Retain"
    assert table["UpdateReplacePolicy"] == "Retain"


# --------------------------------------------------------------------------- ingest


def test_queue_visibility_timeout_covers_six_ingest_timeouts(resources: dict[str, Any]) -> None:
    # Given the ingest queue and the ingest function
    queue = props(resources, "IngestQueue")
    ingest_timeout = props(resources, "IngestFunction")["Timeout"]
    # When the visibility timeout is compared with the function timeout
    # Then it is at least 6x, the AWS Lambda guide's rule for SQS event sources
    assert ingest_timeout == 900
    assert queue["VisibilityTimeout"] >= 6 * ingest_timeout
    assert queue["VisibilityTimeout"] <= 43200  # SQS maximum (12 h)


def test_ingest_queue_redrives_to_encrypted_dlq(resources: dict[str, Any]) -> None:
    # Given both queues
    queue = props(resources, "IngestQueue")
    dlq = props(resources, "IngestDLQ")
    # When the redrive policy and retention are read
    redrive = queue["RedrivePolicy"]
    # Then failures move to the DLQ after 5 receives, the DLQ keeps them longer than the
    # source queue (14 days), and both queues are encrypted with SQS-managed keys.
    assert redrive == {"deadLetterTargetArn": {"Fn::GetAtt": ["IngestDLQ", "Arn"]}, "maxReceiveCount": 5}
    assert dlq["MessageRetentionPeriod"] == 14 * 24 * 3600
    assert dlq["MessageRetentionPeriod"] > queue["MessageRetentionPeriod"]
    assert queue["SqsManagedSseEnabled"] is True
    assert dlq["SqsManagedSseEnabled"] is True


def test_ingest_event_source_takes_one_document_per_invocation_with_bounded_concurrency(
    template: dict[str, Any], resources: dict[str, Any]
) -> None:
    # Given the ingest function's SQS event
    events = props(resources, "IngestFunction")["Events"]
    assert list(events) == ["IncomingDocument"]
    event = events["IncomingDocument"]
    parameter = template["Parameters"]["IngestMaxConcurrency"]
    # When its properties are read
    sqs = event["Properties"]
    # Then it reads the ingest queue one message at a time (a 15-minute document that times out
    # returns only its own message and spends only its own receive count: issue 11, finding 5),
    # reports per-message failures and is capped by the parameter, whose bounds match Lambda's
    # MaximumConcurrency range (2-1000).
    assert event["Type"] == "SQS"
    assert sqs["Queue"] == {"Fn::GetAtt": ["IngestQueue", "Arn"]}
    assert sqs["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert sqs["ScalingConfig"] == {"MaximumConcurrency": {"Ref": "IngestMaxConcurrency"}}
    assert sqs["BatchSize"] == 1
    assert "MaximumBatchingWindowInSeconds" not in sqs
    assert parameter["MinValue"] == 2
    assert parameter["MaxValue"] == 1000
    assert 2 <= parameter["Default"] <= 1000


# --------------------------------------------------------------------------- extract


def test_state_machine_substitutions_match_asl_placeholders(resources: dict[str, Any]) -> None:
    # Given the state machine resource and the ASL file it points at
    machine = props(resources, "ExtractStateMachine")
    assert machine["DefinitionUri"] == "statemachine/extract.asl.json"
    asl_text = (REPO / machine["DefinitionUri"]).read_text(encoding="utf-8")
    # When the ${...} placeholders are collected
    placeholders = set(re.findall(r"\$\{([^}]+)\}", asl_text))
    asl = json.loads(asl_text)
    # Then every placeholder has a substitution and every substitution is used,
    # and the definition is well-formed JSON with a reachable start state.
    assert placeholders == set(machine["DefinitionSubstitutions"])
    # The published alias (SnapStart applies to published versions only)
    assert machine["DefinitionSubstitutions"]["ExtractFunctionArn"] == {"Ref": "ExtractFunctionAliaslive"}
    assert asl["StartAt"] in asl["States"]
    assert machine["Type"] == "STANDARD"


def test_state_machine_logs_without_execution_data_and_traces(resources: dict[str, Any]) -> None:
    # Given the state machine and its log group
    machine = props(resources, "ExtractStateMachine")
    log_group = props(resources, "StateMachineLogGroup")
    # When its logging and tracing settings are read
    logging = machine["Logging"]
    # Then all events are logged to the stack's log group, without execution payloads,
    # the log group has a retention, and X-Ray tracing is on.
    assert logging["Level"] == "ALL"
    assert logging["IncludeExecutionData"] is False
    assert logging["Destinations"] == [
        {"CloudWatchLogsLogGroup": {"LogGroupArn": {"Fn::GetAtt": ["StateMachineLogGroup", "Arn"]}}}
    ]
    assert log_group["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    assert machine["Tracing"] == {"Enabled": True}


def test_state_machine_may_invoke_only_the_extract_function(resources: dict[str, Any]) -> None:
    # Given the state machine's policies
    policies = props(resources, "ExtractStateMachine")["Policies"]
    # When the SAM policy templates are collected
    templates = [p for p in policies if isinstance(p, dict) and "Statement" not in p]
    # Then the only invoke grant is for the extract function, and the only other
    # permissions are the CloudWatch Logs delivery actions Step Functions needs...
    assert templates == [{"LambdaInvokePolicy": {"FunctionName": {"Ref": "ExtractFunction"}}}]
    statements = inline_statements({"Policies": policies})
    actions = {a for s in statements for a in as_list(s["Action"])}
    assert actions == _LOG_DELIVERY_ACTIONS | {"states:StartExecution"}
    # ...and StartExecution on this very state machine only (continue-as-new)
    [start] = [s for s in statements if "states:StartExecution" in as_list(s["Action"])]
    assert start["Resource"] == {"Fn::Sub": "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:stateMachine:${AWS::StackName}-extract"}
    assert props(resources, "ExtractStateMachine")["Name"] == {"Fn::Sub": "${AWS::StackName}-extract"}


# Step Functions developer guide, "Logging using CloudWatch Logs" (IAM policy for logging).
_LOG_DELIVERY_ACTIONS = {
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
}


# --------------------------------------------------------------------------- functions


def test_globals_set_runtime_architecture_tracing_and_shared_layer(template: dict[str, Any]) -> None:
    # Given the function globals
    glob = template["Globals"]["Function"]
    env = glob["Environment"]["Variables"]
    # When they are read
    # Then every function runs Python 3.12 on arm64 with X-Ray active and the shared layer,
    # in aws mode, and Powertools keeps handler responses out of traces.
    assert glob["Runtime"] == "python3.12"
    assert glob["Architectures"] == ["arm64"]
    assert glob["Tracing"] == "Active"
    assert glob["Layers"] == [{"Ref": "SharedLayer"}]
    assert env["LONGDOC_MODE"] == "aws"
    assert env["LONGDOC_TABLE"] == {"Ref": "Table"}
    assert env["LONGDOC_BUCKET"] == {"Ref": "DocumentsBucket"}
    assert env["POWERTOOLS_SERVICE_NAME"] == "longdoc"
    # one metrics namespace per stack, so one stack's RunsFailed never trips another's alarm
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == {"Fn::Sub": "longdoc/${AWS::StackName}"}
    assert env["POWERTOOLS_TRACER_CAPTURE_RESPONSE"] == "false"


def test_shared_layer_is_built_for_the_function_runtime(resources: dict[str, Any]) -> None:
    # Given the shared layer
    layer = resources["SharedLayer"]
    # When its build metadata is read
    # Then SAM builds it from the package folder for python3.12/arm64
    assert layer["Properties"]["ContentUri"] == "layers/longdoc/"
    assert layer["Properties"]["CompatibleRuntimes"] == ["python3.12"]
    assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]
    assert layer["Metadata"] == {"BuildMethod": "python3.12", "BuildArchitecture": "arm64"}
    assert (REPO / "layers" / "longdoc" / "requirements.txt").is_file()
    # named per stack (SAM's default, the logical id, is shared by every stack in the Region)
    assert layer["Properties"]["LayerName"] == {"Fn::Sub": "${AWS::StackName}-longdoc"}
    assert (REPO / "layers" / "longdoc" / "longdoc" / "__init__.py").is_file()


@pytest.mark.parametrize("logical_id", FUNCTIONS)
def test_functions_point_at_code_folders_and_logs_with_retention(
    resources: dict[str, Any], logical_id: str
) -> None:
    # Given one function
    function = props(resources, logical_id)
    # When its code folder and log group are resolved
    code_dir = REPO / function["CodeUri"]
    log_group_id = function["LoggingConfig"]["LogGroup"]["Ref"]
    log_group = props(resources, log_group_id)
    # Then the folder exists with a requirements.txt, the handler is app.handler, and the
    # function logs to a stack-owned log group with the configured retention.
    assert function["Handler"] == "app.handler"
    assert (code_dir / "requirements.txt").is_file()
    assert re.search(r"^def handler\(", (code_dir / "app.py").read_text(encoding="utf-8"), re.MULTILINE)
    assert resources[log_group_id]["Type"] == "AWS::Logs::LogGroup"
    assert log_group["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    assert log_group["LogGroupName"]["Fn::Sub"].startswith("/aws/lambda/${AWS::StackName}-")


def _setting_fields(logical_id: str) -> set[str]:
    """Every setting (field name) the function's code reads: its settings model(s)."""
    models: dict[str, list[Any]] = {"IngestFunction": [IngestFunctionSettings],
                                    "ExtractFunction": [ExtractFunctionSettings],
                                    "ApiFunction": [ApiFunctionSettings, SummaryApiSettings, BulkApiSettings,
                                                    ReviewMonitorSettings],
                                    "SummarizeFunction": [SummarizeSettings],
                                    "BulkFunction": [ExtractFunctionSettings],
                                    "ReviewMonitorFunction": [ReviewMonitorSettings]}
    return {field for model in models[logical_id] for field in model.model_fields}


_REQUIRED_ON_AWS = {"IngestFunction": IngestFunctionSettings, "ExtractFunction": ExtractFunctionSettings,
                    "ApiFunction": ApiFunctionSettings, "SummarizeFunction": SummarizeSettings,
                    "BulkFunction": ExtractFunctionSettings, "ReviewMonitorFunction": ReviewMonitorSettings}


@pytest.mark.parametrize("logical_id", FUNCTIONS)
def test_environment_variables_are_settings_of_that_function(
    template: dict[str, Any], resources: dict[str, Any], logical_id: str
) -> None:
    # Given every LONGDOC_* variable one function gets (globals and its own)
    env = {**template["Globals"]["Function"]["Environment"]["Variables"],
           **props(resources, logical_id).get("Environment", {}).get("Variables", {})}
    names = {name for name in env if name.startswith("LONGDOC_")}
    # When they are mapped to the fields of that function's settings model(s) (env prefix LONGDOC_)
    model = _REQUIRED_ON_AWS[logical_id]
    unknown = {n for n in names if n.removeprefix("LONGDOC_").lower() not in _setting_fields(logical_id)}
    # Then each one configures a real setting of that function (a typo, or a variable for
    # another function, would be silently ignored at runtime), and every setting the function
    # requires on AWS is set
    assert unknown == set()
    assert {"LONGDOC_" + f.upper() for f in model.required_on_aws} <= names


def test_environment_variables_are_known_settings(template: dict[str, Any], resources: dict[str, Any]) -> None:
    # Given every LONGDOC_* variable the template sets (globals and per function)
    env_maps = [template["Globals"]["Function"]["Environment"]["Variables"]]
    env_maps += [props(resources, f).get("Environment", {}).get("Variables", {}) for f in FUNCTIONS]
    names = {name for env in env_maps for name in env if name.startswith("LONGDOC_")}
    # Then they are exactly these, each a setting of a function (longdoc.config.Settings, the
    # summarize settings or the API's summary routes)
    assert names == {
        "LONGDOC_MODE",
        "LONGDOC_TABLE",
        "LONGDOC_BUCKET",
        "LONGDOC_STATE_MACHINE_ARN",
        "LONGDOC_MAX_RUNNING_EXTRACTIONS",
        "LONGDOC_MODEL",
        "LONGDOC_MODEL_PROVIDER",
        "LONGDOC_CLAUDE_MODEL",
        "LONGDOC_ANTHROPIC_SECRET_NAME",
        "LONGDOC_VOYAGE_SECRET_NAME",
        "LONGDOC_PINECONE_SECRET_NAME",
        "LONGDOC_PINECONE_INDEX_HOST",
        "LONGDOC_PINECONE_NAMESPACE",
        "LONGDOC_VOYAGE_MODEL",
        "LONGDOC_EMBEDDING_DIMENSION",
        "LONGDOC_RERANKER",
        "LONGDOC_RERANK_MODEL",
        "LONGDOC_OCR",
        "LONGDOC_SUMMARY_STATE_MACHINE_ARN",
        "LONGDOC_SUMMARY_MAP_CONCURRENCY",
        "LONGDOC_BULK_STATE_MACHINE_ARN",
        "LONGDOC_REVIEW_ACCEPT_THRESHOLD",
        "LONGDOC_REVIEW_MIN_STRATUM_LABELS",
        "LONGDOC_MAX_RUNNING_SUMMARIES",
        "LONGDOC_MAX_RUNNING_BULK_JOBS",
        "LONGDOC_MAX_CONCURRENT_TRIAGE",
        "LONGDOC_TRIAGE_QUERY_WRITER",
    }
    known = set(Settings.model_fields).union(*(_setting_fields(f) for f in FUNCTIONS))
    assert {n for n in names if n.removeprefix("LONGDOC_").lower() not in known} == set()


_SECRET_ARN = re.compile(r"arn:\$\{AWS::Partition\}:secretsmanager:\$\{AWS::Region\}:\$\{AWS::AccountId\}"
                         r":secret:\$\{(\w+)\}-\?\?\?\?\?\?")


@pytest.mark.parametrize(("provider", "extract_secrets"), [
    ("anthropic", {"AnthropicSecretName", "VoyageSecretName", "PineconeSecretName"}),
    ("bedrock", {"VoyageSecretName", "PineconeSecretName"}),
])
def test_secret_access_is_limited_to_the_named_secrets(
    template: dict[str, Any], provider: str, extract_secrets: set[str]
) -> None:
    # Given the resources deployed for one model provider, and the secret names each function needs
    # (with Bedrock the functions call Claude with their IAM role: no Anthropic key at all)
    deployed = deployed_resources(template, {"ModelProvider": provider})
    model_key = {"AnthropicSecretName"} if provider == "anthropic" else set()
    expected = {"IngestFunction": {"VoyageSecretName", "PineconeSecretName"},
                "ExtractFunction": extract_secrets, "ApiFunction": model_key, "SummarizeFunction": model_key,
                "BulkFunction": extract_secrets}
    for logical_id, names in expected.items():
        # When the secretsmanager grants of the function's role are collected
        grants = [s for s in role_statements(deployed, logical_id)
                  if any(a.startswith("secretsmanager:") for a in as_list(s["Action"]))]
        arns = [sub_text(r) for s in grants for r in as_list(s["Resource"])]
        # Then it may only read (GetSecretValue) exactly those secrets, by name + suffix
        assert all(as_list(s["Action"]) == ["secretsmanager:GetSecretValue"] for s in grants), logical_id
        found = set()
        for arn in arns:
            match = _SECRET_ARN.fullmatch(arn)
            assert match, arn
            found.add(match.group(1))
        assert found == names, (provider, logical_id)
    # and the environment of every function that calls Claude names the Anthropic secret only when
    # it is read, and the same provider and model
    for logical_id in ("ExtractFunction", "ApiFunction", "SummarizeFunction", "BulkFunction"):
        env = props(deployed, logical_id)["Environment"]["Variables"]
        assert ("LONGDOC_ANTHROPIC_SECRET_NAME" in env) == (provider == "anthropic"), logical_id
        assert env["LONGDOC_MODEL_PROVIDER"] == {"Ref": "ModelProvider"}
        assert env["LONGDOC_CLAUDE_MODEL"] == {"Ref": "BedrockModelId" if provider == "bedrock" else "ClaudeModel"}


def test_s3_grants_are_scoped_to_prefixes(template: dict[str, Any]) -> None:
    # Given the S3 statements of each function's role (as deployed with the default parameters)
    resources = deployed_resources(template)
    def s3_grants(logical_id: str) -> dict[str, set[str]]:
        grants = actions_by_resource(role_statements(resources, logical_id))
        return {r: {a for a in actions if a.startswith("s3:")} for r, actions in grants.items()
                if any(a.startswith("s3:") for a in actions)}

    prefix = "arn:${AWS::Partition}:s3:::${DocumentsBucket}/"
    # When they are grouped by resource
    # Then ingest reads incoming/ (current versions only: s3:GetObjectVersion is never used),
    # manages chunks/ and its embedding cache, and reads and writes its OCR page cache; extract only
    # reads chunks/; the API reads chunks/ (triage, summary checks) and summary records; the
    # summarize function reads chunks/ and writes its summaries. ListBucket (404 for a missing key,
    # not 403) goes only to those that test for missing keys.
    bucket = prefix.rstrip("/")
    assert s3_grants("IngestFunction") == {
        prefix + "incoming/*": {"s3:GetObject"},
        prefix + "chunks/*": {"s3:GetObject", "s3:PutObject", "s3:DeleteObject"},
        prefix + "embeddings/*": {"s3:GetObject", "s3:PutObject", "s3:DeleteObject"},
        prefix + "ocr/*": {"s3:GetObject", "s3:PutObject"},
        bucket: {"s3:ListBucket"},
    }
    assert s3_grants("ExtractFunction") == {prefix + "chunks/*": {"s3:GetObject"}}
    summaries = {prefix + "chunks/*": {"s3:GetObject"}, prefix + "summaries/*": {"s3:GetObject", "s3:PutObject"},
                 bucket: {"s3:ListBucket"}}
    # (and the API reads incoming/ too: the review page's image of the source PDF page; issue 26:
    # POST /bulk-extractions stores the request under bulk/, GET reads its rejections)
    assert s3_grants("ApiFunction") == {**summaries, prefix + "incoming/*": {"s3:GetObject"},
                                        prefix + "bulk/*": {"s3:GetObject", "s3:PutObject"}}
    assert s3_grants("SummarizeFunction") == summaries
    # and the bulk function reads chunks/ (Prepare retrieves as extract does), reads and writes its
    # request parts under bulk/ and writes results/; no ListBucket (it never tests for a missing key)
    assert s3_grants("BulkFunction") == {prefix + "chunks/*": {"s3:GetObject"},
                                         prefix + "bulk/*": {"s3:GetObject", "s3:PutObject"},
                                         prefix + "results/*": {"s3:PutObject"}}


def test_api_function_may_start_count_and_describe_only_its_executions(template: dict[str, Any]) -> None:
    # Given the API function and its role (as deployed with the default parameters)
    resources = deployed_resources(template)
    function = props(resources, "ApiFunction")
    statements = {s["Sid"]: s for s in role_statements(resources, "ApiFunction")}
    # When its Step Functions grants are read
    start = statements["StartAndCountExtractions"]
    describe = statements["ReadExecutionStatus"]
    summaries = statements["StartSummaries"]
    # Then it starts and counts (admission control) executions of the extract state machine only,
    # and reads the status of that machine's executions only (a stopped run is recorded failed)
    env = function["Environment"]["Variables"]
    extract_env = props(resources, "ExtractFunction")["Environment"]["Variables"]
    assert env["LONGDOC_STATE_MACHINE_ARN"] == {"Ref": "ExtractStateMachine"}
    assert env["LONGDOC_MAX_RUNNING_EXTRACTIONS"] == {"Ref": "MaxRunningExtractions"}
    # (runs record the model name when created, so the API must agree with the extractor)
    assert (env["LONGDOC_MODEL"], env["LONGDOC_MODEL_PROVIDER"], env["LONGDOC_CLAUDE_MODEL"]) == (
        extract_env["LONGDOC_MODEL"],
        extract_env["LONGDOC_MODEL_PROVIDER"],
        extract_env["LONGDOC_CLAUDE_MODEL"],
    )
    assert start["Action"] == ["states:StartExecution", "states:ListExecutions"]
    assert start["Resource"] == {"Ref": "ExtractStateMachine"}
    assert describe["Action"] == "states:DescribeExecution"
    assert describe["Resource"]["Fn::Sub"][0].endswith(":execution:${StateMachineName}:*")
    assert describe["Resource"]["Fn::Sub"][1] == {"StateMachineName": {"Fn::GetAtt": ["ExtractStateMachine", "Name"]}}
    # and it only starts summaries (the summary machine's ARN in its settings), nothing more
    # (issue 26: and counts the running ones first, admission control)
    assert (summaries["Action"], summaries["Resource"]) == (["states:StartExecution", "states:ListExecutions"],
                                                            {"Ref": "SummarizeStateMachine"})
    assert env["LONGDOC_SUMMARY_STATE_MACHINE_ARN"] == {"Ref": "SummarizeStateMachine"}
    # and bulk jobs (POST /bulk-extractions), nothing more
    bulk = statements["StartBulkExtractions"]
    assert (bulk["Action"], bulk["Resource"]) == (["states:StartExecution", "states:ListExecutions"],
                                                  {"Ref": "BulkStateMachine"})
    assert env["LONGDOC_BULK_STATE_MACHINE_ARN"] == {"Ref": "BulkStateMachine"}


# --------------------------------------------------------------------------- API


def test_every_api_route_requires_iam_auth(resources: dict[str, Any]) -> None:
    # Given the API and every Api event of every function
    api = props(resources, "Api")
    routes: dict[tuple[str, str], dict[str, Any]] = {}
    for resource in resources.values():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        for event in resource["Properties"].get("Events", {}).values():
            if event["Type"] == "Api":
                routes[(event["Properties"]["Method"], event["Properties"]["Path"])] = event["Properties"]
    # When the routes are compared with the API's auth settings
    # Then the seven routes exist, all on this API, none overrides the IAM default, and
    # API Gateway (not the caller) holds the Lambda invoke permission.
    assert set(routes) == {
        ("post", "/extractions"),
        ("get", "/extractions/{id}"),
        ("get", "/documents/{doc_id}"),
        ("get", "/openapi.json"),
        ("post", "/summaries"),
        ("get", "/summaries/{summary_id}"),
        ("post", "/triage"),
        ("post", "/bulk-extractions"),
        ("get", "/bulk-extractions/{bulk_id}"),
        ("get", "/reviews"),
        ("get", "/reviews/{item_id}"),
        ("get", "/reviews/{item_id}/page-image"),
        ("post", "/reviews/{item_id}/decisions"),
        ("get", "/extractions/{id}/reviewed-result"),
    }
    assert api["Auth"]["DefaultAuthorizer"] == "AWS_IAM"
    assert api["Auth"]["InvokeRole"] == "NONE"
    for route in routes.values():
        assert route["RestApiId"] == {"Ref": "Api"}
        assert route.get("Auth", {}).get("Authorizer", "AWS_IAM") == "AWS_IAM"
    assert api["StageName"] == {"Ref": "Stage"}
    assert api["TracingEnabled"] is True
    assert props(resources, "ApiFunction")["Timeout"] <= 29


# --------------------------------------------------------------------------- hygiene


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
def test_no_broad_permissions(template: dict[str, Any], provider: str) -> None:
    # Given every policy document and SAM policy list in the template, as deployed for one provider
    statements: list[dict[str, Any]] = []
    managed: list[str] = []
    for resource in deployed_resources(template, {"ModelProvider": provider}).values():
        for node in walk(resource.get("Properties", {})):
            if isinstance(node, dict) and "Statement" in node:
                statements.extend(as_list(node["Statement"]))
        for policy in as_list(resource.get("Properties", {}).get("Policies", [])):
            if isinstance(policy, str):
                managed.append(policy)
    # When the Allow statements are inspected
    allows = [s for s in statements if s["Effect"] == "Allow"]
    # Then no *FullAccess managed policy is attached, no action has a wildcard, and Resource "*"
    # appears only for the actions that support nothing narrower: CloudWatch Logs delivery (Step
    # Functions logging), X-Ray segments (Service Authorization Reference, AWS X-Ray) and
    # Textract's DetectDocumentText (Service Authorization Reference, Amazon Textract: no resource
    # type), the latter alone in its own statement
    assert not [m for m in managed if "FullAccess" in m]
    for statement in allows:
        actions = as_list(statement["Action"])
        assert not [a for a in actions if "*" in a], statement
        if "*" in as_list(statement.get("Resource")):
            assert all(a.startswith(("logs:", "xray:")) for a in actions) or (
                actions == ["textract:DetectDocumentText"] and statement["Sid"] == "OcrScannedPages"), statement
    assert len(allows) >= 8


# The calls each function's code makes (adapters/state/dynamo.py and claims.py, adapters/blob.py,
# adapters/secrets.py, adapters/executions.py, adapters/ocr_textract.py, functions/api/*.py, the
# summarize steps), plus what Lambda itself needs for logs, traces and the SQS event source.
# TransactWriteItems is authorised per contained action (PutItem here), so it has no entry.
_LAMBDA = {"logs:CreateLogStream", "logs:PutLogEvents", "xray:PutTraceSegments", "xray:PutTelemetryRecords"}
_ACTIONS = {
    "IngestFunction": _LAMBDA | {
        "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes",
        "s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:ListBucket",
        # registry and version claims (a conditional put, released by a conditional delete)
        "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:DeleteItem",
        "secretsmanager:GetSecretValue", "textract:DetectDocumentText",
    },
    "ExtractFunction": _LAMBDA | {
        "s3:GetObject", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query",
        "secretsmanager:GetSecretValue",
    },
    "ApiFunction": _LAMBDA | {
        "states:StartExecution", "states:ListExecutions", "states:DescribeExecution",
        # issue 26: triage queries the collection index (no Scan), takes a slot (conditional PutItem,
        # released by UpdateItem); GET /bulk-extractions/{id} reads a page of runs (BatchGetItem)
        "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:BatchGetItem",
        "s3:GetObject", "s3:PutObject", "s3:ListBucket",
    },
    "SummarizeFunction": _LAMBDA | {"s3:GetObject", "s3:PutObject", "s3:ListBucket"},
    # Prepare retrieves as extract does; bulk items: PutItem (conditional for batch ids), GetItem, Query
    "BulkFunction": _LAMBDA | {
        "s3:GetObject", "s3:PutObject", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem",
        "dynamodb:Query", "dynamodb:BatchWriteItem", "secretsmanager:GetSecretValue",  # CreateRuns: batches
    },
    # review items, decisions and registry entries read; metrics are EMF log lines (no PutMetricData)
    "ReviewMonitorFunction": _LAMBDA | {"dynamodb:GetItem", "dynamodb:Query"},
}
# The 5.x rows go through the Messages-API Bedrock endpoint (bedrock-mantle:CreateInference, AWS
# "Making inference requests"); InvokeModel rows (Haiku 4.5) keep bedrock:InvokeModel*.
_MANTLE = "bedrock-mantle:CreateInference"
_BEDROCK = {"bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream", _MANTLE}
# How each function calls Claude: with the key in the Anthropic secret, or Bedrock per ModelProvider.
# Triage (the API) calls messages.create only (InvokeModel); summaries also stream the synthesis.
_MODEL_ACTIONS = {
    "ExtractFunction": {"anthropic": set(), "bedrock": _BEDROCK},  # its secrets grant exists for Voyage/Pinecone
    "ApiFunction": {"anthropic": {"secretsmanager:GetSecretValue"},
                    "bedrock": {"bedrock:InvokeModel", "bedrock-mantle:CreateInference"}},
    "SummarizeFunction": {"anthropic": {"secretsmanager:GetSecretValue"}, "bedrock": _BEDROCK},
}


@pytest.mark.parametrize(("engine", "granted"), [("textract", True), ("off", False)])
def test_ocr_engine_sets_the_setting_and_the_textract_grant(template: dict[str, Any], engine: str,
                                                            granted: bool) -> None:
    # Given the stack deployed with Textract OCR and with OCR off
    deployed = deployed_resources(template, {"OcrEngine": engine})
    statements = role_statements(deployed, "IngestFunction")
    textract = [s for s in statements if any(a.startswith("textract:") for a in as_list(s["Action"]))]
    # Then the ingest function gets the engine as LONGDOC_OCR (a valid OcrSettings value), and
    # DetectDocumentText (Resource "*": no resource type exists for it) only when it is used
    env = props(deployed, "IngestFunction")["Environment"]["Variables"]
    assert env["LONGDOC_OCR"] == {"Ref": "OcrEngine"}
    assert set(template["Parameters"]["OcrEngine"]["AllowedValues"]) <= {"textract", "off"}
    assert template["Parameters"]["OcrEngine"]["Default"] == "textract"
    assert textract == ([{"Sid": "OcrScannedPages", "Effect": "Allow", "Action": "textract:DetectDocumentText",
                          "Resource": "*"}] if granted else [])


@pytest.mark.parametrize("provider", ["anthropic", "bedrock"])
@pytest.mark.parametrize("logical_id", FUNCTIONS)
def test_each_function_role_grants_exactly_what_its_code_calls(
    template: dict[str, Any], provider: str, logical_id: str
) -> None:
    # Given the resources deployed for one model provider
    deployed = deployed_resources(template, {"ModelProvider": provider})
    function = props(deployed, logical_id)
    # When the function's role is read
    statements = role_statements(deployed, logical_id)
    actions = {a for s in statements if s["Effect"] == "Allow" for a in as_list(s["Action"])}
    # Then the function uses its own role (no SAM policy templates such as DynamoDBCrudPolicy, no
    # managed policies such as the SQS event's AWSLambdaSQSQueueExecutionRole on "*"), and the role
    # lists exactly the actions the code calls (Bedrock invoke only for the extract function with
    # ModelProvider=bedrock) ...
    assert "Policies" not in function
    role = props(deployed, function["Role"]["Fn::GetAtt"][0])
    assert "ManagedPolicyArns" not in role
    expected = _ACTIONS[logical_id] | _MODEL_ACTIONS.get(logical_id, {}).get(provider, set())
    assert actions == expected
    # ... on named resources: a table, a queue, a log group, prefixes, secrets, a model; "*" only
    # for X-Ray and for Textract's DetectDocumentText, which has no resource type
    for statement in statements:
        for resource in as_list(statement["Resource"]):
            if resource == "*":
                assert all(a.startswith("xray:") for a in as_list(statement["Action"])) or (
                    as_list(statement["Action"]) == ["textract:DetectDocumentText"]), statement
            elif isinstance(resource, dict) and "Fn::Sub" in resource:
                text = sub_text(resource)
                # object prefixes (/*), secret suffixes (-??????), one state machine's executions (:*)
                wildcard = text.replace("-??????", "").replace("/*", "")
                wildcard = wildcard.replace(":execution:${StateMachineName}:*", ":execution:${StateMachineName}")
                if "*" in wildcard:  # only a foundation model in the inference profile's Regions
                    assert text.startswith("arn:${AWS::Partition}:bedrock:*::foundation-model/${"), text
                    condition = statement["Condition"]["StringEquals"]["bedrock:InferenceProfileArn"]
                    assert sub_text(condition).endswith(":inference-profile/${BedrockModelId}")
    dynamo = [s for s in statements if any(a.startswith("dynamodb:") for a in as_list(s["Action"]))]
    assert [s["Resource"] for s in dynamo] == ([] if logical_id == "SummarizeFunction"
                                               else [{"Fn::GetAtt": ["Table", "Arn"]}])


@pytest.mark.parametrize("logical_id", sorted(_MODEL_ACTIONS))
def test_bedrock_invoke_is_limited_to_the_configured_model_and_profile(template: dict[str, Any],
                                                                       logical_id: str) -> None:
    # Given a role of a function that calls Claude, with ModelProvider=bedrock
    deployed = deployed_resources(template, {"ModelProvider": "bedrock"})
    statements = [s for s in role_statements(deployed, logical_id)
                  if set(as_list(s["Action"])) & (_BEDROCK - {_MANTLE})]
    invoke = _MODEL_ACTIONS[logical_id]["bedrock"] - {_MANTLE}
    # When the Bedrock statements are read
    grants = actions_by_resource(statements)
    # Then the Messages-API endpoint (the 5.x rows) is granted on the account's projects only
    mantle = [s for s in role_statements(deployed, logical_id) if _MANTLE in as_list(s["Action"])]
    assert [sub_text(s["Resource"]) for s in mantle] == [
        "arn:${AWS::Partition}:bedrock-mantle:${AWS::Region}:${AWS::AccountId}:project/*"]
    # and its invoke actions are allowed on the model in this Region and on the inference
    # profile, and on the model elsewhere only through that profile
    assert grants == {
        "arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/${BedrockFoundationModelId}": invoke,
        "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/${BedrockModelId}": invoke,
        "arn:${AWS::Partition}:bedrock:*::foundation-model/${BedrockFoundationModelId}": invoke,
    }
    [profile_only] = [s for s in statements if "Condition" in s]
    assert sub_text(profile_only["Resource"]).startswith("arn:${AWS::Partition}:bedrock:*::")
    # and with the Anthropic API the role has no Bedrock permission at all
    anthropic = deployed_resources(template, {"ModelProvider": "anthropic"})
    assert not [s for s in role_statements(anthropic, logical_id) if set(as_list(s["Action"])) & _BEDROCK]
    assert template["Parameters"]["ModelProvider"]["AllowedValues"] == ["anthropic", "bedrock"]
    assert template["Parameters"]["ModelProvider"]["Default"] == "anthropic"


APP_PROFILE_ARN = "arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/a1b2c3d4e5f6"


@pytest.mark.parametrize(("model_id", "allowed"), [
    ("global.anthropic.claude-sonnet-5-5", True),
    ("us.anthropic.claude-haiku-4-5-20251001-v1:0", True),
    ("anthropic.claude-sonnet-4-5-20250929-v1:0", True),
    (APP_PROFILE_ARN, True),
    ("arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-haiku-4-5-20251001-v1:0", True),
    ("arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/A1B2", False),
    ("arn:aws:s3:::bucket", False),
    ("Anthropic Claude", False),
])
def test_the_bedrock_model_parameter_takes_ids_and_inference_profile_arns(template: dict[str, Any], model_id: str,
                                                                          allowed: bool) -> None:
    # Given BedrockModelId's AllowedPattern (CloudFormation matches the whole value, issue 28)
    pattern = template["Parameters"]["BedrockModelId"]["AllowedPattern"]
    # Then foundation-model ids, system inference profile ids and application inference-profile ARNs pass
    assert (re.fullmatch(pattern, model_id) is not None) is allowed


@pytest.mark.parametrize("logical_id", sorted(_MODEL_ACTIONS))
def test_an_application_inference_profile_arn_is_granted_as_that_arn(template: dict[str, Any], logical_id: str) -> None:
    # Given ModelProvider=bedrock with an application inference profile ARN as the model
    deployed = deployed_resources(template, {"ModelProvider": "bedrock", "BedrockModelId": APP_PROFILE_ARN})
    statements = [s for s in role_statements(deployed, logical_id)
                  if set(as_list(s["Action"])) & (_BEDROCK - {_MANTLE})]
    # When the Bedrock statements are read, Then the profile ARN itself is granted (not
    # ...:inference-profile/<the ARN>), and the foundation model only through that profile
    resources = [r for s in statements for r in as_list(s["Resource"])]
    assert {"Ref": "BedrockModelId"} in resources
    assert not any("inference-profile/${BedrockModelId}" in sub_text(r) for r in resources if isinstance(r, dict)
                   and "Fn::Sub" in r)
    [profile_only] = [s for s in statements if "Condition" in s]
    assert profile_only["Condition"]["StringEquals"]["bedrock:InferenceProfileArn"] == {"Ref": "BedrockModelId"}


def test_reranker_is_off_by_default_and_set_on_every_function_that_retrieves(template: dict[str, Any],
                                                                              resources: dict[str, Any]) -> None:
    # Given the Reranker and RerankModel parameters
    params = template["Parameters"]
    # Then reranking is off unless chosen, Voyage is the only other choice, and the model defaults to rerank-2.5
    assert params["Reranker"]["Default"] == "none" and params["Reranker"]["AllowedValues"] == ["none", "voyage"]
    assert params["RerankModel"]["Default"] == "rerank-2.5"
    assert re.fullmatch(params["RerankModel"]["AllowedPattern"], "rerank-2.5-lite")
    # And the functions that build a session's retriever (extract, bulk) or rank a claim's clauses (the
    # API's POST /triage) get both, the others neither
    for logical_id in FUNCTIONS:
        env = props(resources, logical_id).get("Environment", {}).get("Variables", {})
        retrieves = logical_id in ("ExtractFunction", "BulkFunction", "ApiFunction")
        assert (env.get("LONGDOC_RERANKER") == {"Ref": "Reranker"}) is retrieves, logical_id
        assert (env.get("LONGDOC_RERANK_MODEL") == {"Ref": "RerankModel"}) is retrieves, logical_id


_KEY_PATTERNS = (
    re.compile(r"sk-ant-"),  # Anthropic
    re.compile(r"pcsk_"),  # Pinecone
    re.compile(r"(?<![A-Za-z0-9])pa-[A-Za-z0-9_-]{8,}"),  # Voyage AI
    re.compile(r"AKIA[0-9A-Z]{16}"),  # AWS access key id
)


@pytest.mark.parametrize("relative", ["template.yaml", "samconfig.toml", "docs/deploy.md"])
def test_no_api_keys_in_deployment_files(relative: str) -> None:
    # Given a deployment file
    path = REPO / relative
    if not path.exists():
        pytest.skip(f"{relative} not written yet")
    text = path.read_text(encoding="utf-8")
    # When it is scanned for provider key prefixes
    hits = [p.pattern for p in _KEY_PATTERNS if p.search(text)]
    # Then none is found
    assert hits == []


def test_outputs_expose_the_deployed_resources(template: dict[str, Any]) -> None:
    # Given the template outputs
    outputs = template["Outputs"]
    # When their names and values are read
    # Then the operator gets every name/URL the docs and scripts use
    assert set(outputs) >= {
        "DocumentsBucketName",
        "IngestQueueUrl",
        "IngestDLQUrl",
        "TableName",
        "ExtractStateMachineArn",
        "ApiUrl",
        "ExtractFunctionName",
        "IngestDLQArn",
        "AlarmTopicArn",
        "SummarizeStateMachineArn",
        "SummarizeFunctionName",
        "BulkStateMachineArn",
        "BulkFunctionName",
    }
    assert outputs["SummarizeStateMachineArn"]["Value"] == {"Ref": "SummarizeStateMachine"}
    # the DLQ's ARN is what `aws sqs start-message-move-task --source-arn` takes (docs/operations.md)
    assert outputs["IngestDLQArn"]["Value"] == {"Fn::GetAtt": ["IngestDLQ", "Arn"]}
    assert outputs["DocumentsBucketName"]["Value"] == {"Ref": "DocumentsBucket"}
    assert outputs["ExtractStateMachineArn"]["Value"] == {"Ref": "ExtractStateMachine"}
    assert outputs["ApiUrl"]["Value"] == {
        "Fn::Sub": "https://${Api}.execute-api.${AWS::Region}.${AWS::URLSuffix}/${Stage}"
    }


@pytest.mark.skipif(not CFN_LINT.exists(), reason="tools venv not installed (make install)")
@pytest.mark.slow  # cfn-lint in the tools venv, a subprocess
def test_cfn_lint_reports_no_findings() -> None:
    # Given the cfn-lint from the tools virtualenv
    # When it lints the template
    result = subprocess.run(
        [str(CFN_LINT), "--", str(TEMPLATE_PATH)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=REPO,
    )
    # Then it exits 0 with no findings
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == ""


def test_extract_function_uses_snapstart_on_a_published_alias(template) -> None:
    # Given the extract function, invoked once per session (its cold start is paid often)
    fn = template["Resources"]["ExtractFunction"]["Properties"]
    # Then SnapStart applies to its published versions, behind the alias the state machine invokes
    assert fn["SnapStart"] == {"ApplyOn": "PublishedVersions"}
    assert fn["AutoPublishAlias"] == "live"


@pytest.mark.parametrize("reranker", ["none", "voyage"])
def test_triage_in_the_api_function_reranks_with_the_stacks_reranker(template: dict[str, Any], reranker: str) -> None:
    # Given the stack deployed with each Reranker value (issue 31, item 3: POST /triage reranks on AWS)
    deployed = deployed_resources(template, {"Reranker": reranker, "ModelProvider": "bedrock"})
    env = props(deployed, "ApiFunction")["Environment"]["Variables"]
    # Then the API function gets the same reranker settings as extraction
    assert env["LONGDOC_RERANKER"] == {"Ref": "Reranker"} and env["LONGDOC_RERANK_MODEL"] == {"Ref": "RerankModel"}
    # And it may read the Voyage secret (and is told its name) only when it reranks
    grants = [s for s in role_statements(deployed, "ApiFunction")
              if any(a.startswith("secretsmanager:") for a in as_list(s["Action"]))]
    names = {m.group(1) for s in grants for r in as_list(s["Resource"]) if (m := _SECRET_ARN.fullmatch(sub_text(r)))}
    assert names == ({"VoyageSecretName"} if reranker == "voyage" else set())
    assert ("LONGDOC_VOYAGE_SECRET_NAME" in env) == (reranker == "voyage")
