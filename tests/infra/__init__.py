"""CDK template, bundler and CLI tests."""
