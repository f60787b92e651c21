"""AWS CDK app of the hybrid counter: one stack, one construct per concern."""
