"""Local stand-ins for AWS: the Lambda runtime, a Step Functions engine for the real ASL, a watched drop folder."""
