"""Where new gold items come from: the production query log and its feedback, the flywheel
export, synthetic questions and adversarial variants.
"""
