#!/bin/sh
# Compiles Kafka's AbstractStickyAssignor (and the few classes it needs) from an apache/kafka
# checkout, plus Oracle.java, into ./classes. Usage: build.sh KAFKA_CHECKOUT
# Needs a JDK (11+). See README.md.
set -eu
kafka=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
src=$kafka/clients/src/main/java/org/apache/kafka
for f in clients/consumer/ConsumerPartitionAssignor.java clients/consumer/ConsumerGroupMetadata.java \
         clients/consumer/internals/AbstractPartitionAssignor.java \
         clients/consumer/internals/AbstractStickyAssignor.java clients/consumer/internals/Utils.java \
         common/Cluster.java common/Node.java common/PartitionInfo.java common/TopicPartition.java \
         common/Configurable.java common/KafkaException.java common/TopicIdPartition.java \
         common/Uuid.java common/ClusterResource.java; do
    mkdir -p "$work/org/apache/kafka/$(dirname "$f")"
    cp "$src/$f" "$work/org/apache/kafka/$f"
done
# Stand-ins for what those classes import but the assignor never uses (slf4j, class loading).
cp -r "$here/stubs/." "$work/"
rm -rf "$here/classes"
mkdir -p "$here/classes"
javac -nowarn -d "$here/classes" $(find "$work" -name '*.java')
javac -nowarn -d "$here/classes" -cp "$here/classes" "$here/Oracle.java"
rm -rf "$work"
echo "built $here/classes; run: java -cp $here/classes Oracle < scenarios.txt"
