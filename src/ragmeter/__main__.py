from ragmeter.cli import main
from ragmeter.executors.collector import own_process

own_process()
main()
