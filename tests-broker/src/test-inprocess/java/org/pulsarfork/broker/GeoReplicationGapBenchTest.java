/*
 * Licensed to the Apache Software Foundation (ASF) under one
 * or more contributor license agreements.  See the NOTICE file
 * distributed with this work for additional information
 * regarding copyright ownership.  The ASF licenses this file
 * to you under the Apache License, Version 2.0 (the
 * "License"); you may not use this file except in compliance
 * with the License.  You may obtain a copy of the License at
 *
 *   http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing,
 * software distributed under the License is distributed on an
 * "AS IS" BASIS, WITHOUT WARRANTIES OR CONDITIONS OF ANY
 * KIND, either express or implied.  See the License for the
 * specific language governing permissions and limitations
 * under the License.
 */
package org.pulsarfork.broker;

import static org.awaitility.Awaitility.await;
import static org.pulsarfork.bench.BenchGroups.UPSTREAM_BUG;
import static org.testng.Assert.assertTrue;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.broker.BrokerTestUtil;
import org.apache.pulsar.broker.ServiceConfiguration;
import org.apache.pulsar.broker.service.OneWayReplicatorTestBase;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.zookeeper.LocalBookkeeperEnsemble;
import org.apache.pulsar.zookeeper.ZookeeperServerTest;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * The report's timeline on two real clusters (#26113), deduplication on: the remote refuses E3 before its
 * dedup check (a topic-level maximum message size), stores E4 and E5, then the limit is lifted and the
 * resend of E3 is answered as a duplicate. Upstream completed it as persisted and deleted E3 on the
 * source: the replication backlog drained with E3 on neither side. The rule checked: while E3 has not
 * reached the remote, the source keeps it.
 */
public class GeoReplicationGapBenchTest extends OneWayReplicatorTestBase {
    private static final Duration WAIT = Duration.ofSeconds(60);

    @Override
    @BeforeClass(alwaysRun = true, timeOut = 300_000)
    public void setup() throws Exception {
        super.setup();
    }

    @Override
    @AfterClass(alwaysRun = true, timeOut = 300_000)
    public void cleanup() throws Exception {
        super.cleanup();
    }

    @Override
    protected void setConfigDefaults(ServiceConfiguration config, String clusterName,
                                     LocalBookkeeperEnsemble bookkeeperEnsemble, ZookeeperServerTest zk) {
        super.setConfigDefaults(config, clusterName, bookkeeperEnsemble, zk);
        config.setBrokerDeduplicationEnabled(true);
    }

    @Test(groups = UPSTREAM_BUG, timeOut = 240_000)
    public void aMessageTheRemoteRejectedStaysOnTheSourceUntilTheRemoteHasIt() throws Exception {
        String topic = BrokerTestUtil.newUniqueName("persistent://" + replicatedNamespace + "/gap");
        admin1.topics().createNonPartitionedTopic(topic);
        waitReplicatorStarted(topic);
        admin2.topicPolicies().setMaxMessageSize(topic, 1024);
        await().atMost(WAIT).until(() -> Integer.valueOf(1024).equals(admin2.topicPolicies().getMaxMessageSize(topic)));

        try (Consumer<String> remote = client2.newConsumer(Schema.STRING).topic(topic).subscriptionName("check")
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
             Producer<String> source = client1.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                     .create()) {
            source.send("E3:" + "x".repeat(4096));
            source.send("E4");
            source.send("E5");
            Set<String> onRemote = new HashSet<>();
            await().atMost(WAIT).until(() -> {
                receiveAvailable(remote, onRemote);
                return onRemote.contains("E4") && onRemote.contains("E5");
            });

            admin2.topicPolicies().removeMaxMessageSize(topic);
            // Upstream deletes E3 on the source within a few seconds of the duplicate receipt; the rule
            // must hold throughout.
            await().during(Duration.ofSeconds(15)).atMost(Duration.ofSeconds(20)).until(() -> {
                receiveAvailable(remote, onRemote);
                return onRemote.contains("E3") || replicationBacklog(topic) > 0;
            });
            assertTrue(onRemote.contains("E3") || replicationBacklog(topic) > 0,
                    "E3 left the source backlog without reaching the remote");
        }
    }

    private long replicationBacklog(String topic) throws Exception {
        return admin1.topics().getStats(topic).getReplication().get(cluster2).getReplicationBacklog();
    }

    private static void receiveAvailable(Consumer<String> consumer, Set<String> received) throws Exception {
        Message<String> msg;
        while ((msg = consumer.receive(100, TimeUnit.MILLISECONDS)) != null) {
            String value = msg.getValue();
            received.add(value.startsWith("E3:") ? "E3" : value);
            consumer.acknowledge(msg);
        }
    }
}
